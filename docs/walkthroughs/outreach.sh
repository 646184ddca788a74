#!/usr/bin/env bash
# Outreach, offline (docs/outreach.md, "Try it offline"): crawl the demo directory, validate its leads, connect the
# demo mailbox, run a two-step campaign, read step 1 in the demo members' mail, reply as one of them, and see the
# reply stop that lead's sequence. Needs bash, curl and node, and, each in its own terminal:
#
#   npm run demo-site                                            # prints DEMO_MAIL_PASSWORD and the lines below
#   ALLOW_PRIVATE_NETWORK=true DNS_SERVERS=127.0.0.1:2053 npm start
#
# then: DEMO_MAIL_PASSWORD=<printed> bash docs/walkthroughs/outreach.sh
# ALLOW_PRIVATE_NETWORK lets the service reach the demo (loopback); DNS_SERVERS points its email and mailbox
# checks at the demo's DNS server, which answers for the demo domains. It can be run again as it is: it logs in
# when the account exists, and each run adds a source, a job, a mailbox connection and a campaign.
#
# Environment: QUARRY_URL (http://127.0.0.1:3000), DEMO_URL (http://127.0.0.1:3001), QUARRY_EMAIL, QUARRY_PASSWORD
# (the account, created when missing), QUARRY_KEY_FILE (where its API key is kept between runs, default under
# ~/.cache/quarry), DEMO_MAIL_PASSWORD (required), DEMO_SMTP_PORT (2525), DEMO_IMAP_PORT (2143),
# WAIT_SECONDS (180: the longest any one wait may take; a reply is read within OUTREACH_IMAP_INTERVAL_SECONDS
# at worst, at once while the service's IMAP IDLE watch is up).
set -euo pipefail

B=${QUARRY_URL:-http://127.0.0.1:3000}
SITE=${DEMO_URL:-http://127.0.0.1:3001}
EMAIL=${QUARRY_EMAIL:-me@example.com}
PASSWORD=${QUARRY_PASSWORD:-a long password}
MAIL_PASSWORD=${DEMO_MAIL_PASSWORD:?set DEMO_MAIL_PASSWORD to the password npm run demo-site printed}
MAILBOX=you@quarry-demo.example
MAIL_HOST=mail.quarry-demo.example
WAIT_SECONDS=${WAIT_SECONDS:-180}

# `pick a.b` prints one field of the JSON on stdin; it shows the JSON and fails when the field is missing.
pick() {
  node -e 'let s = require("fs").readFileSync(0, "utf8"), v;
    try { v = process.argv[1].split(".").reduce((o, k) => o?.[k], JSON.parse(s)); } catch {}
    if (v == null) { console.error(s || "no answer: is the service running?"); process.exit(1); }
    console.log(typeof v === "object" ? JSON.stringify(v) : v);' "$1"
}
# `query 'expression'` prints what a JavaScript expression over `d` (the JSON on stdin) gives; fails on null.
query() {
  node -e 'const s = require("fs").readFileSync(0, "utf8"); let v;
    try { v = new Function("d", `return (${process.argv[1]})`)(JSON.parse(s)); } catch (e) { v = undefined; }
    if (v == null || v === false) { console.error(s || "no answer"); process.exit(1); }
    console.log(Array.isArray(v) ? v.join("\n") : typeof v === "object" ? JSON.stringify(v) : v);' "$1"
}
# `wait_for 'what' command…` runs the command every second until it succeeds, for WAIT_SECONDS at most.
wait_for() {
  local what=$1 deadline=$((SECONDS + WAIT_SECONDS))
  shift
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "gave up after ${WAIT_SECONDS}s waiting for $what; the last answer:" >&2
      "$@" >&2 || true
      return 1
    fi
    sleep 1
  done
}
# `api URL [curl options]`: the service, with your key; a body (-d) is JSON.
api() { curl -sS -H "authorization: Bearer $KEY" -H 'content-type: application/json' "$@"; }
demo_mail() { curl -sS -u "$MAILBOX:$MAIL_PASSWORD" -H 'accept: application/json' "$@"; }

RUN_START=$(node -e 'console.log(new Date().toISOString())')
RUN=$(date -u +%Y%m%d-%H%M%S)-$$

# 1. An account. Signup and login are limited to 5 per 15 minutes per address, so the key of an earlier run is kept
#    (readable by you only) and used while it works; otherwise sign up, or log in when the account exists (409).
ACCOUNT_ID=$(printf '%s %s' "$B" "$EMAIL" |
  node -e 'const { createHash } = require("crypto");
    console.log(createHash("sha256").update(require("fs").readFileSync(0)).digest("hex"))')
KEY_FILE=${QUARRY_KEY_FILE:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry/walkthrough-${ACCOUNT_ID:0:16}.key}
KEY=$(cat "$KEY_FILE" 2>/dev/null || true)
STATUS=$(curl -sS -o /dev/null -w '%{http_code}' "$B/api/users" -H "authorization: Bearer ${KEY:-none}")
if [ "$STATUS" != 200 ]; then
  ACCOUNT=$(node -e 'console.log(JSON.stringify({ email: process.argv[1], password: process.argv[2],
    termsAccepted: true, privacyAccepted: true }))' "$EMAIL" "$PASSWORD")
  JSON='content-type: application/json'
  KEY=$(curl -sS "$B/api/auth/signup" -H "$JSON" -d "$ACCOUNT" | pick data.apiKey 2>/dev/null) ||
    KEY=$(curl -sS "$B/api/auth/login" -H "$JSON" -d "$ACCOUNT" | pick data.apiKey)
  mkdir -p "$(dirname "$KEY_FILE")"
  (umask 077 && printf '%s\n' "$KEY" >"$KEY_FILE")
fi

# 2. Leads: the demo directory, crawled once (as in the README's walk-through).
SRC=$(api "$B/api/sources" -d @- <<EOF | pick data.source.id
{"name": "Lakeside guild members ($RUN)", "url": "$SITE/members", "scrapeType": "STATIC",
 "selectors": {"item": ".member", "fullName": ".name", "jobTitle": ".title", "company": ".company",
               "email": "a.email@href", "phone": "a.phone@href", "nextPage": "a.next"}}
EOF
)
api -X POST "$B/api/sources/$SRC/activate" -d '{}' | pick success >/dev/null
JOB=$(api "$B/api/jobs" -d "{\"name\":\"Outreach demo $RUN\",\"sourceId\":\"$SRC\"}" | pick data.job.id)
job_over() { api "$B/api/jobs/$JOB" | query '["COMPLETED","FAILED","CANCELLED"].includes(d.data.job.status)'; }
wait_for "the crawl" job_over
api "$B/api/jobs/$JOB" | query 'd.data.job.status === "COMPLETED"' >/dev/null
LEADS=$(api "$B/api/leads?sourceId=$SRC&limit=100" | query 'd.data.leads.filter((l) => l.email).map((l) => l.id)')
COUNT=$(($(echo "$LEADS" | wc -l)))
echo "crawled $COUNT leads with an email"
IDS=$(echo "$LEADS" | node -e 'console.log(JSON.stringify(require("fs").readFileSync(0, "utf8").trim().split("\n")))')

# 3. Validation: syntax, then MX records, which the demo's DNS server gives the demo domains.
api "$B/api/leads/validate-bulk" -d "{\"leadIds\":$IDS}" | query 'd.data.totalQueued' >/dev/null
validated() {
  local id
  for id in $LEADS; do
    api "$B/api/leads/$id" | query "d.data.lead.emailValidation?.checkedAt >= '$RUN_START'" || return 1
  done
}
wait_for "the validation of $COUNT leads" validated
for id in $LEADS; do
  api "$B/api/leads/$id" | query '["valid","risky"].includes(d.data.lead.emailValidation.status)' >/dev/null || {
    echo "lead $id did not validate: is the service started with DNS_SERVERS=127.0.0.1:<the demo's DNS port>?" >&2
    exit 1
  }
done
echo "validated $COUNT leads"

# 4. The demo mailbox. Both logins are checked before anything is stored; a fresh connection each run, so a demo
#    restarted with a new password does not leave this run with a stale one.
USER_ENC=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$MAILBOX")
PASS_ENC=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$MAIL_PASSWORD")
CONNECTION=$(api "$B/api/outreach/connections" -d @- <<EOF | pick data.connection.id
{"provider": "smtp", "name": "Demo mailbox ($RUN)",
 "mailboxes": [{"email": "$MAILBOX", "fromName": "You at Quarry demo", "dailyLimit": 2000,
   "smtpUrl": "smtp://$USER_ENC:$PASS_ENC@$MAIL_HOST:${DEMO_SMTP_PORT:-2525}",
   "imapUrl": "imap://$USER_ENC:$PASS_ENC@$MAIL_HOST:${DEMO_IMAP_PORT:-2143}"}]}
EOF
)
echo "connected $MAILBOX"

# 5. A campaign of two steps, open all day every day and without gaps between mails, so step 1 goes at once;
#    step 2 would follow three days later.
CAMPAIGN=$(api "$B/api/outreach/campaigns" -d @- <<EOF | pick data.campaign.id
{"connectionId": "$CONNECTION", "name": "Demo outreach $RUN",
 "steps": [
   {"subject": "{Quick|Short} question for {{company}}",
    "body": "Hi {{firstName|there}},\n\ndoes {{company}} buy castings from outside suppliers?\n\n{{senderName}}"},
   {"subject": "", "body": "Following up, {{firstName|there}}.", "delayDays": 3}],
 "window": {"timezone": "UTC", "days": [1,2,3,4,5,6,7], "startHour": 0, "endHour": 24},
 "dailyLimit": 2000, "minGapSeconds": 0, "maxGapSeconds": 0}
EOF
)
api "$B/api/outreach/campaigns/$CAMPAIGN/leads" -d "{\"leadIds\":$IDS}" |
  query "d.data.uploaded === $COUNT" >/dev/null
api "$B/api/outreach/campaigns/$CAMPAIGN/status" -d '{"status":"active"}' | pick success >/dev/null
echo "campaign $CAMPAIGN: $COUNT leads enrolled, started"

# 6. Step 1 in the members' mail on the demo site (what a member sees: $SITE/mail, with the mailbox login).
arrived() {
  demo_mail "$SITE/mail" |
    query "d.messages.filter((m) => m.date >= '$RUN_START' && m.from === '$MAILBOX').length >= $COUNT"
}
wait_for "step 1 to reach the $COUNT members" arrived
echo "step 1 delivered to $COUNT members:"
demo_mail "$SITE/mail" |
  query "d.messages.filter((m) => m.date >= '$RUN_START').map((m) => '  ' + m.to + ': ' + m.subject)"

# 7. One member replies (as the demo's reply form does); the reply lands in the mailbox's INBOX over IMAP.
MAIL=$(demo_mail "$SITE/mail" |
  query "d.messages.filter((m) => m.date >= '$RUN_START').sort((a, b) => (a.to < b.to ? -1 : 1))[0].id")
REPLIER=$(demo_mail "$SITE/mail/$MAIL" | pick mail.to)
demo_mail "$SITE/mail/$MAIL/reply" -H 'content-type: application/json' \
  -d '{"text": "Thanks, we do. Send me your price list."}' | pick reply.messageId >/dev/null
echo "$REPLIER replied"

# 8. Quarry reads the reply (IMAP IDLE, or the schedule): the lead is REPLIED and its sequence stops.
replied() { api "$B/api/outreach/campaigns/$CAMPAIGN" | query 'd.data.campaign.leads.REPLIED === 1'; }
wait_for "the reply to stop the sequence" replied
api "$B/api/outreach/campaigns/$CAMPAIGN" | query '"enrollments: " + JSON.stringify(d.data.campaign.leads)'
api "$B/api/leads?sourceId=$SRC&status=REPLIED" | query '"lead REPLIED: " + d.data.leads.map((l) => l.email).join(", ")'
api "$B/api/outreach/campaigns/$CAMPAIGN/analytics" | query '"analytics: " + JSON.stringify(d.data.totals)'
api "$B/api/outreach/emails?campaignId=$CAMPAIGN" |
  query '"inbox: " + d.data.threads.flatMap((t) => t.messages).length + " mails in " +
    d.data.threads.length + " thread(s)"'
