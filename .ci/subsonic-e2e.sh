#!/usr/bin/env bash
# End-to-end test of the Subsonic / OpenSubsonic interface (/rest/…) with a real client library:
#   - installs the pinned client (py-opensonic) into target/ci/e2e-venv when it is missing,
#   - starts `<binary> serve` on a free loopback port with a fresh DATA_DIR and <music-folder>
#     as LOCAL_MEDIA_IMPORT_PATH: on the embedded default (SQLite, local disk), or, when
#     E2E_DATABASE_URL and E2E_S3_ENDPOINT are set, on PostgreSQL + S3 (E2E_S3_BUCKET,
#     E2E_S3_PREFIX; moto's test credentials),
#   - logs in as the admin, fetches the admin's Subsonic app password from the REST API,
#   - runs .ci/subsonic-e2e.py against the server (it triggers the scan itself with startScan).
# The server is stopped on exit; on failure the tail of its log is printed.
#
#   .ci/subsonic-e2e.sh <path-to-musiclib-binary> <music-folder>
#
# SUBSONIC_E2E_VENV overrides the venv location.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=subsonic-e2e
. "$repo/.ci/e2e-server.sh" "$@"

client_version="10.4.1"
venv="${SUBSONIC_E2E_VENV:-$repo/target/ci/e2e-venv}"
# ---------------------------------------------------------------- client library
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("py-opensonic") != sys.argv[1])' \
    "$client_version" 2>/dev/null; then
  log "installing py-opensonic==$client_version into ${venv#"$repo"/}"
  python3 -c 'import venv, ensurepip' 2>/dev/null \
    || die "python3 with venv and ensurepip is required (Debian: apt-get install python3-venv)"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "py-opensonic==$client_version"
fi

# ---------------------------------------------------------------- server
# A stand-in LRCLIB on loopback (no public service is reached): every lookup answers the
# fixture's synced record, so the client reads real lyrics back.
fixture="$repo/../shared/fixtures/lrclib/get_synced.json"
[ -f "$fixture" ] || die "no LRCLIB fixture at $fixture"
lrclib_port="$(free_port)"
python3 "$repo/.ci/lrclib-stub.py" "$lrclib_port" "$fixture" >"$tmp/lrclib.log" 2>&1 &
helpers+=($!)
start_server "http://127.0.0.1:$lrclib_port"

# ---------------------------------------------------------------- credentials
# http METHOD URL [curl options…]: prints the body of a 2xx answer, else fails with status and body.
http() {
  local method=$1 url=$2 out status
  shift 2
  out="$(mktemp -p "$tmp" http.XXXXXX)"
  status="$(curl -sS -o "$out" -w '%{http_code}' -X "$method" "$@" "$url")" \
    || die "$method $url: curl failed"
  [ "${status:0:1}" = 2 ] || die "$method $url: HTTP $status: $(head -c 500 "$out")"
  cat "$out"
}
# json_field NAME: the string field NAME of the JSON object on stdin.
json_field() {
  python3 -c 'import json, sys
value = json.load(sys.stdin).get(sys.argv[1])
if not isinstance(value, str) or not value:
    sys.exit(f"no string field {sys.argv[1]!r} in the answer")
print(value)' "$1"
}

log "logging in as $admin_user and fetching the Subsonic app password"
login="$(http POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
  -d "{\"username\":\"$admin_user\",\"password\":\"$admin_password\"}")"
token="$(json_field access_token <<<"$login")" || die "POST /api/v1/auth/login: $login"
legacy="$(http GET "$base/api/v1/users/me/legacy-password" -H "Authorization: Bearer $token")"
subsonic_user="$(json_field username <<<"$legacy")" || die "GET /api/v1/users/me/legacy-password: $legacy"
subsonic_password="$(json_field password <<<"$legacy")" || die "GET /api/v1/users/me/legacy-password: no password"
[ "$subsonic_user" = "$admin_user" ] || die "the app password belongs to $subsonic_user, expected $admin_user"

# ---------------------------------------------------------------- the client
log "running .ci/subsonic-e2e.py (py-opensonic $client_version)"
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "$repo/.ci/subsonic-e2e.py" \
  --base-url "$base" --username "$subsonic_user" --app-password "$subsonic_password" --admin
log "Subsonic end-to-end test passed ($setup)"
