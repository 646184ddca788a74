#!/usr/bin/env bash
# The five-minute walk-through (README): from an empty service to the demo site's leads.
# Needs `npm run demo-site` and `ALLOW_PRIVATE_NETWORK=true npm start` running; see docs/walkthroughs/README.md.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

login_or_signup # sets KEY: signs up once, then reuses the kept key (or logs in)
api GET /api/users # you, with counts

PROJECT=$(api POST /api/projects '{"name": "Lakeside guild", "color": "#3366ff"}' | pick data.project.id)
LEAD=$(api POST /api/leads '{"sourceUrl": "https://analytical.example/team", "firstName": "Ada",
  "lastName": "Lovelace", "email": "ada@example.com", "company": "Analytical"}' | pick data.lead.id)
api GET '/api/leads?company=analytical&limit=50' # keyset-paginated: follow data.nextCursor
api POST "/api/leads/$LEAD/validate-email" # syntax, MX (needs DNS), disposable, role, typo…
api GET /api/profile-types/templates | pick data.templates.length # built-in profile types

# a key that can only read leads
READ_KEY=$(api POST /api/api-keys '{"name": "read-only", "scopes": ["leads:read"],
  "expiresAt": "2030-01-01T00:00:00Z"}' | pick data.apiKey.key)

# a copy of all your data, made in the background (3 a week: later runs download the newest one)
curl -sS --max-time 60 -X POST "$QUARRY_URL/api/users/export" -H "authorization: Bearer $KEY" \
  -H 'content-type: application/json' -d '{"format": "CSV"}' -w '\n'
export_done() { # a check for wait_for: 0 done, 1 not yet, 2 (with the reason) hopeless
  local status
  status=$(api GET /api/users/export/status | pick data.exports.0.status) || return 1
  if [ "$status" = FAILED ]; then echo "the export FAILED"; return 2; fi
  [ "$status" = COMPLETED ]
}
wait_for "the export to complete" 120 export_done
REQUEST=$(api GET /api/users/export/status | pick data.exports.0.requestId)
curl -sS --max-time 60 -fo quarry-export.zip "$QUARRY_URL/api/users/export/download?requestId=$REQUEST" \
  -H "authorization: Bearer $KEY" -w 'export %{http_code}: %{filename_effective}\n'

# a source: the demo directory, with selectors for its markup (docs/selectors.md); activated, it can run
SOURCE=$(api POST /api/sources "{\"name\": \"Lakeside guild members\", \"url\": \"$DEMO_URL/members\",
  \"scrapeType\": \"STATIC\", \"projectId\": \"$PROJECT\",
  \"selectors\": {\"item\": \".member\", \"fullName\": \".name\", \"jobTitle\": \".title\", \"company\": \".company\",
                  \"email\": \"a.email@href\", \"phone\": \"a.phone@href\", \"nextPage\": \"a.next\"}}" |
  pick data.source.id)
api POST "/api/sources/$SOURCE/activate" | pick data.source.status

# a job crawls it once; its events show the progress live and end when the job is done (3 minutes at most)
JOB=$(api POST /api/jobs "{\"name\": \"First run\", \"sourceId\": \"$SOURCE\"}" | pick data.job.id)
curl -sSN --max-time 180 "$QUARRY_URL/api/jobs/$JOB/events" -H "authorization: Bearer $KEY"
[ "$(api GET "/api/jobs/$JOB" | pick data.job.status)" = COMPLETED ] || fail "job $JOB did not complete"

# the 10 leads it found (name, title, company, email, phone, and where each came from), read with the read-only key
KEY=$READ_KEY api GET "/api/leads?sourceId=$SOURCE"
