#!/usr/bin/env bash
# Cloud browser (docs/browser.md): a session, Playwright and Puppeteer on its cdpUrl at once, then the same browser
# driven over REST with curl only: navigate, wait, evaluate, a screenshot, the page as markdown, a scrape with the
# sources' selectors, its tabs; asleep and woken where it was; a live view's page; then the session released. Needs the demo site, the service
# (ALLOW_PRIVATE_NETWORK=true, so the browser may open the demo site on loopback) and Chromium (CHROMIUM_PATH).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
login_or_signup

# a session: its own Chromium; `cdpUrl` carries a short-lived token for this session only, never the API key
SESSION=$(api POST /api/browser/sessions '{"timeoutMs": 300000, "metadata": {"walkthrough": "browser"}}' |
  pick data.session)
ID=$(printf '%s' "$SESSION" | pick id)
CDP_URL=$(printf '%s' "$SESSION" | pick cdpUrl)
node "$(dirname "$0")/browser-cdp.mjs" "$CDP_URL" "$DEMO_URL"

# the same browser over REST: every action answers what it did, a failed one 422 ACTION_FAILED naming the step
S=/api/browser/sessions/$ID
api POST "$S/actions/navigate" "{\"url\": \"$DEMO_URL/members\", \"waitUntil\": \"load\"}" | pick data
api POST "$S/actions/wait" '{"selector": ".member", "state": "visible"}' >/dev/null
MEMBERS=$(api POST "$S/actions/evaluate" '{"expression": "document.querySelectorAll(\".member\").length"}' |
  pick data.result)
[ "$MEMBERS" -gt 0 ] || fail "no member on the page"
curl -sS --max-time 60 "$QUARRY_URL$S/page/screenshot?format=png" -H "authorization: Bearer $KEY" -o members.png
[ "$(head -c 4 members.png | od -An -tx1 | tr -d ' ')" = 89504e47 ] || fail "no screenshot: $(head -c 500 members.png)"
api GET "$S/page/content?format=markdown" | query 'd.data.content.includes("Page 1 of")'
api POST "$S/page/scrape" '{"selectors": {"item": ".member", "fullName": ".name", "email": "a.email@href"}}' |
  query "d.data.items.length === $MEMBERS && d.data.items.every((i) => i.fields.email.includes('@'))"
api GET "$S/tabs" | query 'd.data.tabs.filter((t) => t.active).length === 1'

# asleep: cookies, storage and tabs saved, Chromium stopped; woken: the same session LIVE again, where it was
SLEPT=$(api POST "$S/sleep" | pick data)
printf '%s' "$SLEPT" | query 'd.session.status === "SLEEPING"'
SNAPSHOT_ID=$(printf '%s' "$SLEPT" | pick snapshot.id)
api POST "/api/browser/snapshots/$SNAPSHOT_ID/wake" | query 'd.data.session.status === "LIVE"'
api POST "$S/actions/evaluate" '{"expression": "location.pathname"}' | query 'd.data.result === "/members"'

# a live view to embed in an iframe: a signed URL serving a self-contained page (view only: input is dropped)
VIEW_URL=$(api POST "$S/live-views" '{"mode": "view", "expiresInMs": 600000}' | pick data.url)
VIEW_PAGE=$(curl -sSf --max-time 30 "$VIEW_URL")
[[ "$VIEW_PAGE" == '<!doctype html>'* ]] || fail "no live-view page at $VIEW_URL: ${VIEW_PAGE:0:200}"

# released: Chromium closed, the session kept for history
api DELETE "$S" | query 'd.data.session.status === "RELEASED"'
