# Shared by every walk-through (docs/walkthroughs/README.md): settings, and helpers that stop at the first
# failure with a message saying what failed, and never wait without a deadline. Source it from bash.

: "${QUARRY_URL:=http://127.0.0.1:3000}"           # the service
: "${DEMO_URL:=http://127.0.0.1:3001}"             # the demo site (npm run demo-site; DEMO_SITE_PORT)
: "${QUARRY_EMAIL:=me@example.com}"                # the walk-throughs' account: signed up on first use
: "${QUARRY_PASSWORD:=a long password}"
# The account's API key is kept here and reused while it works, so a re-run logs in only when it must
# (signup and login are limited to 5 a quarter-hour per IP address).
: "${QUARRY_STATE_DIR:=${XDG_STATE_HOME:-$HOME/.local/state}/quarry-walkthroughs}"
QUARRY_URL=${QUARRY_URL%/}
DEMO_URL=${DEMO_URL%/}

fail() {
  echo "walk-through failed: $*" >&2
  exit 1
}

# `pick data.x.y` prints one field of the JSON answer on stdin; it shows the answer and fails when the field is
# missing. `pick data.leads.length` counts.
pick() {
  node -e 'let s = require("fs").readFileSync(0, "utf8"), v;
    try { v = process.argv[1].split(".").reduce((o, k) => o?.[k], JSON.parse(s)); } catch {}
    if (v == null) { console.error(`no ${process.argv[1]} in: ${s || "(empty answer)"}`); process.exit(1); }
    console.log(typeof v === "object" ? JSON.stringify(v) : v);' "$1"
}

# `query 'EXPRESSION'` prints what a JavaScript expression over `d` (the JSON answer on stdin) gives, an array one
# item a line. As a check it fails, showing the answer, when the expression gives false, null or undefined:
# `query 'd.data.uploaded === 10'`.
query() {
  node -e 'const s = require("fs").readFileSync(0, "utf8"); let v, why = "";
    try { v = new Function("d", `return (${process.argv[1]})`)(JSON.parse(s)); } catch (e) { why = ` (${e.message})`; }
    if (v == null || v === false) {
      console.error(`not so: ${process.argv[1]}${why}, in: ${s || "(empty answer)"}`); process.exit(1); }
    console.log(Array.isArray(v) ? v.join("\n") : typeof v === "object" ? JSON.stringify(v) : v);' "$1"
}

# `api METHOD PATH [JSON]`: one call with the walk-through's key (KEY); prints the answer. An answer that is not
# 2xx, or none within 60 s, fails showing what came back.
api() {
  local method=$1 path=$2 out status
  local args=(-sS --max-time 60 -X "$method" -w '\n%{http_code}' "$QUARRY_URL$path")
  [ -n "${KEY:-}" ] && args+=(-H "authorization: Bearer $KEY")
  [ $# -ge 3 ] && args+=(-H 'content-type: application/json' --data-binary "$3")
  out=$(curl "${args[@]}") || fail "$method $path: no answer from $QUARRY_URL (is the service running?)"
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  case $status in
    2??) printf '%s\n' "$out" ;;
    *) fail "$method $path answered $status: $out" ;;
  esac
}

# `wait_for WHAT SECONDS COMMAND…`: runs COMMAND every second until it succeeds (exit 0). A COMMAND that can tell
# the wait is hopeless prints why and returns 2: the walk-through then fails at once, naming WHAT and that reason.
# Anything else (1, or a `fail` inside COMMAND) means "not yet"; after SECONDS the walk-through fails naming WHAT
# and showing what COMMAND said last. COMMAND runs in a subshell: it cannot end the walk-through, nor set variables.
wait_for() {
  local what=$1 seconds=$2 out status
  shift 2
  local deadline=$((SECONDS + seconds))
  while :; do
    status=0
    out=$("$@" 2>&1) || status=$?
    case $status in
      0) return 0 ;;
      2) fail "$what: ${out:-(the check gave no reason)}" ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
      [ -n "$out" ] && printf '%s\n' "$out" >&2
      fail "$what: still not so after ${seconds} s"
    fi
    sleep 1
  done
}

service_up() { curl -sf --max-time 5 "$QUARRY_URL/api/health" >/dev/null; }

# `login_or_signup` sets KEY: the key this account used last time if it still works (kept in QUARRY_STATE_DIR,
# one file per service and account, readable only by you); else a new one from signing up, or from logging in
# when the account exists. A refused login (wrong password, rate limit) stops the walk-through saying why.
login_or_signup() {
  wait_for "the service at $QUARRY_URL answering /api/health (the first start takes up to a minute)" 120 service_up
  mkdir -p "$QUARRY_STATE_DIR"
  local file status account
  file="$QUARRY_STATE_DIR/$(printf '%s %s' "$QUARRY_URL" "$QUARRY_EMAIL" | cksum | cut -d' ' -f1).key"
  if [ -s "$file" ]; then
    KEY=$(cat "$file")
    status=$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' "$QUARRY_URL/api/users" \
      -H "authorization: Bearer $KEY") || status=000
    if [ "$status" = 200 ]; then
      echo "using the key kept in $file" >&2
      return 0
    fi
  fi
  KEY=
  account=$(node -e 'console.log(JSON.stringify({ email: process.argv[1], password: process.argv[2],
    termsAccepted: true, privacyAccepted: true }))' "$QUARRY_EMAIL" "$QUARRY_PASSWORD")
  auth_call signup "$account"
  if [ "$AUTH_STATUS" = 409 ]; then # the account exists: log in
    echo "$QUARRY_EMAIL exists: logging in" >&2
    auth_call login "$account"
  fi
  KEY=$(printf '%s' "$AUTH_ANSWER" | pick data.apiKey)
  (umask 077 && printf '%s\n' "$KEY" >"$file")
  echo "signed in as $QUARRY_EMAIL; key kept in $file" >&2
}

# `auth_call signup|login JSON` sets AUTH_STATUS and AUTH_ANSWER; anything but 2xx or a signup's 409 fails.
auth_call() {
  local out headers="$QUARRY_STATE_DIR/last-auth.headers"
  out=$(curl -sS --max-time 60 -w '\n%{http_code}' -D "$headers" "$QUARRY_URL/api/auth/$1" \
    -H 'content-type: application/json' --data-binary "$2") || fail "POST /api/auth/$1: no answer from $QUARRY_URL"
  AUTH_STATUS=${out##*$'\n'}
  AUTH_ANSWER=${out%$'\n'*}
  case $AUTH_STATUS in
    2??) ;;
    409) [ "$1" = signup ] || fail "$1 answered 409: $AUTH_ANSWER" ;;
    429) fail "$1 refused, rate limit (signup and login: 5 a quarter-hour per IP address): try again in" \
      "$(grep -i '^retry-after:' "$headers" | tr -dc 0-9) s" ;;
    *) fail "$1 answered $AUTH_STATUS: $AUTH_ANSWER" ;;
  esac
}
