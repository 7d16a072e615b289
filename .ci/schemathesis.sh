#!/usr/bin/env bash
# Schema fuzzing of /api/v1: schemathesis (pinned, from PyPI, installed under target/ci)
# against the real binary on the embedded default, signed in as a superuser, every check on
# (5xx, statuses, headers and bodies against the document, refusing invalid and accepting
# valid input, auth). Exceptions, each with its reason: .ci/schemathesis.toml.
#   .ci/schemathesis.sh <musiclib binary> [examples per operation, default 30]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(realpath "$1")"
examples="${2:-30}"
state="$repo/target/ci"
venv="$state/schemathesis"
version=4.32.5
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$version"; then
  "$venv/bin/pip" --version >/dev/null 2>&1 || python3 -m venv --clear "$venv"
  "$venv/bin/pip" install -q "schemathesis==$version"
fi

work="$(mktemp -d /tmp/musiclib-schemathesis.XXXXXX)"
server=""
finish() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap finish EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
base="http://127.0.0.1:$port"
mkdir -p "$work/music"
# Outside services point at a closed port: nothing leaves the machine.
closed=http://127.0.0.1:9
env -i PATH="$PATH" HOME="$work" DATA_DIR="$work/data" BIND_ADDRESS="127.0.0.1:$port" \
  LOCAL_MEDIA_IMPORT_PATH="$work/music" ADMIN_USERNAME=admin ADMIN_PASSWORD=schemathesis-admin \
  ACOUSTID_BASE_URL=$closed COVERART_BASE_URL=$closed LRCLIB_BASE_URL=$closed \
  LASTFM_BASE_URL=$closed LISTENBRAINZ_BASE_URL=$closed SOUND_ANALYSIS=false LOUDNESS_ANALYSIS=false \
  "$bin" serve >"$state/schemathesis-server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done
token="$(curl -sf -X POST "$base/api/v1/auth/login" -H 'content-type: application/json' \
  -d '{"username":"admin","password":"schemathesis-admin"}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')"

# One worker: schemathesis's threads hit a CPython 3.11 parser bug ("AST constructor recursion
# depth mismatch") now and then.
log="$state/schemathesis.log"
if ! "$venv/bin/schemathesis" --no-color --config-file "$repo/.ci/schemathesis.toml" run "$base/api/v1/openapi.json" \
  -H "Authorization: Bearer $token" --max-examples "$examples" --workers 1 \
  --suppress-health-check all --seed 1 --report junit --report-dir "$state/schemathesis-report" >"$log" 2>&1; then
  sed -n '/^=* FAILURES =*$/,$p' "$log" | cut -c1-400 | head -n 200 >&2
  echo "schemathesis failed: $log" >&2
  exit 1
fi
grep -E '^ *[0-9]+ generated' "$log" || true
