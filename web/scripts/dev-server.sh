#!/usr/bin/env bash
# Starts a scratch musiclib server on the test corpus for developing and for `npm run e2e`:
# an admin account, the corpus imported, LRCLIB answered by e2e/lrclib-mock.mjs (the corpus has
# no lyrics), private feed and station URLs allowed (the podcast and radio tests serve theirs on
# loopback; ALLOW_PRIVATE_URLS=false to refuse them). Prints the variables the e2e tests read.
# Stop with: fuser -k $PORT/tcp $LRC_PORT/tcp
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/.." && pwd)"
PORT="${PORT:-18123}"; LRC_PORT="${LRC_PORT:-18124}"
BIN="${MUSICLIB_BIN:-$repo/target/debug/musiclib}"
DATA="${DATA:-/tmp/musiclib-webdev}"
USER_NAME="${MUSICLIB_USER:-admin}"; PASSWORD="${MUSICLIB_PASSWORD:-admin-password-1}"
rm -rf "$DATA" && mkdir -p "$DATA"
node "$here/e2e/lrclib-mock.mjs" "$LRC_PORT" >"$DATA/lrclib.log" 2>&1 &
DATA_DIR="$DATA" BIND_ADDRESS="127.0.0.1:$PORT" LOCAL_MEDIA_IMPORT_PATH="$repo/target/corpus/library" \
  ADMIN_USERNAME="$USER_NAME" ADMIN_PASSWORD="$PASSWORD" LRCLIB_BASE_URL="http://127.0.0.1:$LRC_PORT" \
  ALLOW_PRIVATE_URLS="${ALLOW_PRIVATE_URLS:-true}" \
  "$BIN" serve >"$DATA/server.log" 2>&1 &
base="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -sf "$base/health" >/dev/null && break; sleep 0.2; done
token=$(curl -sf "$base/api/v1/auth/login" -H 'content-type: application/json' \
  -d "{\"username\":\"$USER_NAME\",\"password\":\"$PASSWORD\"}" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).access_token))')
job=$(curl -sf -X POST "$base/api/v1/sources/local_folder/scan" -H "authorization: Bearer $token" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);console.log(j.job_id??j.id)})')
for _ in $(seq 1 300); do
  state=$(curl -sf "$base/api/v1/jobs/$job" -H "authorization: Bearer $token" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).state))')
  [ "$state" = succeeded ] || [ "$state" = failed ] && break
  sleep 0.5
done
echo "scan: $state"
echo "MUSICLIB_URL=$base MUSICLIB_USER=$USER_NAME MUSICLIB_PASSWORD=$PASSWORD"
