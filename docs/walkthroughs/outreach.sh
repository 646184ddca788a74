#!/usr/bin/env bash
# Outreach, offline (docs/outreach.md, "Try it offline"): crawl the demo directory, validate its leads, connect the
# demo mailbox, run a two-step campaign, read step 1 in the demo members' mail, reply as one of them, and see the
# reply stop that lead's sequence. Needs bash, curl and node, and, each in its own terminal:
#
#   npm run demo-site                                  # prints the mailbox password and the lines below
#   ALLOW_PRIVATE_NETWORK=true DNS_SERVERS=127.0.0.1:2053 npm start
#
# then: DEMO_MAIL_PASSWORD=<printed> bash docs/walkthroughs/outreach.sh
# ALLOW_PRIVATE_NETWORK lets the service reach the demo (loopback); DNS_SERVERS points its email and mailbox
# checks at the demo's DNS server, which answers for the demo domains only. Or load outreach.env (fixed password,
# the ports) in each terminal first: `set -a; source docs/walkthroughs/outreach.env; set +a`.
#
# Settings: those of lib.sh (QUARRY_URL, DEMO_URL, the account, QUARRY_STATE_DIR), DEMO_MAIL_PASSWORD (required),
# DEMO_SMTP_PORT (2525), DEMO_IMAP_PORT (2143), WAIT_SECONDS (180: the longest any one wait may take; the first
# run's reply can take up to a minute to be read, later ones come at once over the service's IMAP IDLE watch).
# It can be run again as it is: each run adds a source, a job, a mailbox connection and a campaign.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${DEMO_MAIL_PASSWORD:?set DEMO_MAIL_PASSWORD to the password npm run demo-site printed}"
MAILBOX=you@quarry-demo.example
MAIL_HOST=mail.quarry-demo.example
WAIT_SECONDS=${WAIT_SECONDS:-180}

# `demo_mail PATH [curl options]`: the members' mail on the demo site, logged in as the mailbox (JSON).
demo_mail() {
  local path=$1
  shift
  curl -sS --fail-with-body --max-time 30 -u "$MAILBOX:$DEMO_MAIL_PASSWORD" -H 'accept: application/json' \
    "$@" "$DEMO_URL$path" || fail "$DEMO_URL$path: refused or no answer (is npm run demo-site running, and" \
    "DEMO_MAIL_PASSWORD the password it printed?)"
}

login_or_signup
RUN_START=$(node -e 'console.log(new Date().toISOString())')
RUN=$(date -u +%Y%m%d-%H%M%S)-$$

# 1. Leads: the demo directory, crawled once (as in the README's walk-through).
SRC=$(api POST /api/sources "{\"name\": \"Lakeside guild members ($RUN)\", \"url\": \"$DEMO_URL/members\",
  \"scrapeType\": \"STATIC\",
  \"selectors\": {\"item\": \".member\", \"fullName\": \".name\", \"jobTitle\": \".title\", \"company\": \".company\",
                  \"email\": \"a.email@href\", \"phone\": \"a.phone@href\", \"nextPage\": \"a.next\"}}" |
  pick data.source.id)
api POST "/api/sources/$SRC/activate" | pick success >/dev/null
JOB=$(api POST /api/jobs "{\"name\": \"Outreach demo $RUN\", \"sourceId\": \"$SRC\"}" | pick data.job.id)
job_over() { api GET "/api/jobs/$JOB" | query '["COMPLETED","FAILED","CANCELLED"].includes(d.data.job.status)'; }
wait_for "the crawl (job $JOB)" "$WAIT_SECONDS" job_over
api GET "/api/jobs/$JOB" | query 'd.data.job.status === "COMPLETED"' >/dev/null
LEADS=$(api GET "/api/leads?sourceId=$SRC&limit=100" | query 'd.data.leads.filter((l) => l.email).map((l) => l.id)')
[ -n "$LEADS" ] || fail "the crawl found no lead with an email"
COUNT=$(printf '%s\n' "$LEADS" | grep -c .)
echo "crawled $COUNT leads with an email"
IDS=$(echo "$LEADS" | node -e 'console.log(JSON.stringify(require("fs").readFileSync(0, "utf8").trim().split("\n")))')

# 2. Validation: syntax, then MX records, which the demo's DNS server gives the demo domains.
api POST /api/leads/validate-bulk "{\"leadIds\": $IDS}" | query 'd.data.totalQueued' >/dev/null
validated() {
  local id
  for id in $LEADS; do
    api GET "/api/leads/$id" | query "d.data.lead.emailValidation?.checkedAt >= '$RUN_START'" || return 1
  done
}
wait_for "the validation of $COUNT leads" "$WAIT_SECONDS" validated
for id in $LEADS; do
  api GET "/api/leads/$id" | query 'd.data.lead.emailValidation.status === "valid"' >/dev/null ||
    fail "lead $id did not validate: is the service started with DNS_SERVERS=127.0.0.1:<the demo's DNS port>?"
done
echo "validated $COUNT leads"

# 3. The demo mailbox. Both logins are checked before anything is stored; a fresh connection each run, so a demo
#    restarted with a new password does not leave this run with a stale one. Then its domain's DNS as receivers
#    read it (MX, SPF, DKIM, DMARC), from the demo's DNS server.
USER_ENC=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$MAILBOX")
PASS_ENC=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$DEMO_MAIL_PASSWORD")
CONNECTION=$(api POST /api/outreach/connections "{\"provider\": \"smtp\", \"name\": \"Demo mailbox ($RUN)\",
  \"mailboxes\": [{\"email\": \"$MAILBOX\", \"fromName\": \"You at Quarry demo\", \"dailyLimit\": 2000,
    \"smtpUrl\": \"smtp://$USER_ENC:$PASS_ENC@$MAIL_HOST:${DEMO_SMTP_PORT:-2525}\",
    \"imapUrl\": \"imap://$USER_ENC:$PASS_ENC@$MAIL_HOST:${DEMO_IMAP_PORT:-2143}\"}]}" | pick data.connection.id)
echo "connected $MAILBOX"
ACCOUNT=$(api GET "/api/outreach/accounts?connectionId=$CONNECTION" | pick data.accounts.0.id)
api POST "/api/outreach/accounts/$ACCOUNT/test" '{}' |
  query 'd.data.passed === 4 && "mailbox DNS: " + d.data.checks.map((c) => `${c.check} ${c.pass ? "pass" : "fail"}`).join(", ")'

# 4. A campaign of two steps, open all day every day and without gaps between mails, so step 1 goes at once;
#    step 2 would follow three days later.
CAMPAIGN=$(api POST /api/outreach/campaigns "{\"connectionId\": \"$CONNECTION\", \"name\": \"Demo outreach $RUN\",
  \"steps\": [
    {\"subject\": \"{Quick|Short} question for {{company}}\",
     \"body\": \"Hi {{firstName|there}},\\n\\ndoes {{company}} buy castings from outside suppliers?\\n\\n{{senderName}}\"},
    {\"subject\": \"\", \"body\": \"Following up, {{firstName|there}}.\", \"delayDays\": 3}],
  \"window\": {\"timezone\": \"UTC\", \"days\": [1,2,3,4,5,6,7], \"startHour\": 0, \"endHour\": 24},
  \"dailyLimit\": 2000, \"minGapSeconds\": 0, \"maxGapSeconds\": 0}" | pick data.campaign.id)
api POST "/api/outreach/campaigns/$CAMPAIGN/leads" "{\"leadIds\": $IDS}" | query "d.data.uploaded === $COUNT" >/dev/null
api POST "/api/outreach/campaigns/$CAMPAIGN/status" '{"status": "active"}' | pick success >/dev/null
echo "campaign $CAMPAIGN: $COUNT leads enrolled, started"

# 5. Step 1 in the members' mail on the demo site (what a member sees: $DEMO_URL/mail, with the mailbox login).
arrived() {
  demo_mail /mail |
    query "d.messages.filter((m) => m.date >= '$RUN_START' && m.from === '$MAILBOX').length >= $COUNT"
}
wait_for "step 1 to reach the $COUNT members" "$WAIT_SECONDS" arrived
echo "step 1 delivered to $COUNT members:"
demo_mail /mail | query "d.messages.filter((m) => m.date >= '$RUN_START').map((m) => '  ' + m.to + ': ' + m.subject)"

# 6. One member replies (as the demo's reply form does); the reply lands in the mailbox's INBOX over IMAP.
MAIL=$(demo_mail /mail |
  query "d.messages.filter((m) => m.date >= '$RUN_START').sort((a, b) => (a.to < b.to ? -1 : 1))[0].id")
REPLIER=$(demo_mail "/mail/$MAIL" | pick mail.to)
demo_mail "/mail/$MAIL/reply" -H 'content-type: application/json' \
  -d '{"text": "Thanks, we do. Send me your price list."}' | pick reply.messageId >/dev/null
echo "$REPLIER replied"

# 7. Quarry reads the reply (IMAP IDLE, or the schedule): the lead is REPLIED and its sequence stops.
replied() { api GET "/api/outreach/campaigns/$CAMPAIGN" | query 'd.data.campaign.leads.REPLIED === 1'; }
wait_for "the reply to stop the sequence" "$WAIT_SECONDS" replied
api GET "/api/outreach/campaigns/$CAMPAIGN" | query '"enrollments: " + JSON.stringify(d.data.campaign.leads)'
api GET "/api/leads?sourceId=$SRC&status=REPLIED" |
  query '"lead REPLIED: " + d.data.leads.map((l) => l.email).join(", ")'
api GET "/api/outreach/campaigns/$CAMPAIGN/analytics" |
  query "d.data.totals.sent === $COUNT && d.data.totals.replied === 1 && 'analytics: ' + JSON.stringify(d.data.totals)"
api GET "/api/outreach/emails?campaignId=$CAMPAIGN" |
  query 'd.data.threads.flatMap((t) => t.messages).length === 2 &&
    "inbox: " + d.data.threads.flatMap((t) => t.messages).length + " mails in " + d.data.threads.length + " thread(s)"'
