#!/usr/bin/env bash
# Qualification (docs/qualification.md): the demo site's members scraped as profiles of a type of your own, a
# FILTER and a SCORED matching rule over them, the accounts they belong to, and a deal campaign ranking those
# accounts by the rules. Offline: no AI provider and no web search needed. Needs the demo site and the service.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
login_or_signup

# a profile type: the fields of a guild member's profile (made once; later runs find it by its slug)
TYPE=$(api GET '/api/profile-types?limit=1000' |
  node -e 'const { data } = JSON.parse(require("fs").readFileSync(0, "utf8"));
    console.log(data.profileTypes.find((t) => t.slug === "guild-member")?.id ?? "")')
if [ -z "$TYPE" ]; then
  TYPE=$(api POST /api/profile-types '{"name": "Guild member", "slug": "guild-member",
    "fields": [{"name": "role", "type": "string"}, {"name": "company", "type": "string"},
               {"name": "email", "type": "email"}]}' | pick data.id)
fi

# a source that yields a profile per lead: selector keys named after the type's fields fill them
SOURCE=$(api POST /api/sources "{\"name\": \"Guild members as profiles\", \"url\": \"$DEMO_URL/members\",
  \"scrapeType\": \"STATIC\", \"profileTypeId\": \"$TYPE\",
  \"selectors\": {\"item\": \".member\", \"fullName\": \".name\", \"jobTitle\": \".title\", \"company\": \".company\",
                  \"email\": \"a.email@href\", \"role\": \".title\", \"nextPage\": \"a.next\"}}" | pick data.source.id)
api POST "/api/sources/$SOURCE/activate" | pick data.source.status
JOB=$(api POST /api/jobs "{\"name\": \"Profiles\", \"sourceId\": \"$SOURCE\"}" | pick data.job.id)
job_done() { [[ $(api GET "/api/jobs/$JOB" | pick data.job.status) =~ ^(COMPLETED|FAILED|CANCELLED)$ ]]; }
wait_for "job $JOB to finish" 180 job_done
[ "$(api GET "/api/jobs/$JOB" | pick data.job.status)" = COMPLETED ] || fail "job $JOB did not complete"
api GET "/api/profiles?profileTypeId=$TYPE&limit=3"

# a FILTER rule: directors; tried on a sample first (stores nothing), then run over every profile of the type
DIRECTORS='{"name": "Directors", "profileTypeId": "'$TYPE'", "type": "FILTER",
  "conditions": {"operator": "AND", "conditions": [{"field": "profile.role", "operator": "contains", "value": "director"}]}}'
api POST /api/matching/preview "{\"rule\": $DIRECTORS}" | pick data.summary
FILTER_RULE=$(api POST /api/matching/rules "$DIRECTORS" | pick data.rule.id)
# a SCORED rule: 0–100 from weighted criteria, matched from 50
SCORED_RULE=$(api POST /api/matching/rules '{"name": "Buyers", "profileTypeId": "'$TYPE'", "type": "SCORED",
  "threshold": 50, "criteria": [
    {"label": "Buys", "weight": 60, "condition": {"field": "profile.role", "operator": "regex", "value": "procurement|supply"}},
    {"label": "Runs a plant", "weight": 40, "condition": {"field": "lead.jobTitle", "operator": "contains", "value": "manager"}}]}' |
  pick data.rule.id)

for RULE in "$FILTER_RULE" "$SCORED_RULE"; do
  api POST /api/matching/execute "{\"ruleId\": \"$RULE\"}" | pick data.run.status
  run_done() { [[ $(api GET "/api/matching/rules/$RULE" | pick data.rule.lastRun.status) =~ ^(COMPLETED|FAILED)$ ]]; }
  wait_for "the run of rule $RULE to finish" 120 run_done
  api GET "/api/matching/rules/$RULE" | pick data.rule.lastRun
done
# the matched profiles, best first
api GET "/api/matching/results?ruleId=$FILTER_RULE&matched=true"
MATCHED=$(api GET "/api/matching/rules/$FILTER_RULE" | pick data.rule.lastRun.matched)
[ "$MATCHED" -ge 3 ] || fail "expected the demo site's 3 directors among the matches, got $MATCHED"

# accounts: the companies the leads belong to (by email domain), with their figures
api GET '/api/accounts?q=nordvik'
# a deal campaign ties the source and the rules together (weights 1–100) and ranks the accounts
CAMPAIGN=$(api POST /api/campaigns "{\"name\": \"Guild buyers\", \"profileTypeId\": \"$TYPE\",
  \"sourceIds\": [\"$SOURCE\"], \"target\": {\"titles\": [\"Director\", \"Procurement\"]},
  \"rules\": [{\"ruleId\": \"$FILTER_RULE\", \"weight\": 70}, {\"ruleId\": \"$SCORED_RULE\", \"weight\": 30}]}" |
  pick data.campaign.id)
api GET "/api/campaigns/$CAMPAIGN/ranked-accounts?limit=5"
