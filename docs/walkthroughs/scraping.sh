#!/usr/bin/env bash
# Scraping (docs/scraping.md): source ideas from the built-in catalogue (no AI provider or web search needed), the
# demo directory rendered in Chromium (a DYNAMIC source), the job's live events, and where each lead came from.
# Needs the demo site, the service (ALLOW_PRIVATE_NETWORK=true) and Chromium (CHROMIUM_PATH).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
login_or_signup

# proposals only: without an AI provider they come from the catalogue of public directories, saying so in `reasoning`
api POST /api/sources/discover '{"query": "manufacturers in Manchester", "count": 3}' | pick data.sources.0

# a DYNAMIC source: each page is rendered in Chromium, `waitFor` waits for the members to be on it
SOURCE=$(api POST /api/sources "{\"name\": \"Guild members, rendered\", \"url\": \"$DEMO_URL/members\",
  \"scrapeType\": \"DYNAMIC\", \"maxPages\": 3,
  \"selectors\": {\"item\": \".member\", \"waitFor\": \".member\", \"fullName\": \".name\", \"jobTitle\": \".title\",
                  \"company\": \".company\", \"email\": \"a.email@href\", \"phone\": \"a.phone@href\",
                  \"nextPage\": \"a.next\"}}" | pick data.source.id)
api POST "/api/sources/$SOURCE/activate" | pick data.source.status

# the job's Server-Sent Events: status, progress and leadsFound, until it ends (3 minutes at most)
JOB=$(api POST /api/jobs "{\"name\": \"Rendered run\", \"sourceId\": \"$SOURCE\"}" | pick data.job.id)
curl -sSN --max-time 180 "$QUARRY_URL/api/jobs/$JOB/events" -H "authorization: Bearer $KEY"
api GET "/api/jobs/$JOB" | pick data.job
[ "$(api GET "/api/jobs/$JOB" | pick data.job.status)" = COMPLETED ] || fail "job $JOB did not complete"

# a lead with its provenance: the page, the selector that matched, whether the element was visible
LEAD=$(api GET "/api/leads?sourceId=$SOURCE&limit=1" | pick data.leads.0.id)
api GET "/api/leads/$LEAD"
FOUND=$(api GET "/api/jobs/$JOB" | pick data.job.leadsFound)
[ "$FOUND" -eq 10 ] || fail "the rendered crawl found $FOUND leads, not the demo site's 10"
