#!/usr/bin/env bash
# A friend's server for the remote-search e2e tests: a SECOND musiclib on loopback, used by the
# server under test as its `subsonic` remote source (as musiclib-bin/tests/remote.rs does).
#   - three tracks of its own: corpus audio retagged "The Far Friends – Borrowed Tunes", so
#     nothing it has collides with the corpus the tested server imports;
#   - a user `friend`, whose Subsonic app password the tested server signs in with;
#   - reached through e2e/slow-link.mjs, which paces audio to FRIEND_RATE bytes/s (default
#     409600), so a download shows its progress and can be cancelled before it ends.
# Prints, on stdout, `export` lines to eval before starting the tested server:
#   SUBSONIC_SOURCE_URL, SUBSONIC_SOURCE_USERNAME, SUBSONIC_SOURCE_PASSWORD, FRIEND_PIDS
# Logs go to <data-dir>/*.log. Stop it with: kill $FRIEND_PIDS
#
#   web/e2e/friend-server.sh <musiclib-binary> <corpus-library-folder> <port> <data-dir>
#   (the slow link listens on FRIEND_LINK_PORT, default <port>+1)
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 <musiclib-binary> <corpus-library-folder> <port> <data-dir>" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
binary="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; library="$(cd "$2" && pwd)"
port="$3"; data="$(mkdir -p "$4" && cd "$4" && pwd)"
link_port="${FRIEND_LINK_PORT:-$((port + 1))}"
rate="${FRIEND_RATE:-409600}"
user=friend; password=friend-password-1
base="http://127.0.0.1:$port"
command -v ffmpeg >/dev/null || { echo "$0: ffmpeg is needed (to retag the corpus files)" >&2; exit 1; }

rm -rf "$data" && mkdir -p "$data/audio"

# Its tracks: title, source file in the corpus, track number.
tracks=(
  "Borrowed Birdsong|Opus Collective/Field Recordings & Drones/03 - Birdsong Algorithm.opus|1"
  "Borrowed Summer|Los Señores del Ritmo/Canción de Mañana (2021)/04 - Adiós, Verano.mp3|2"
  "Borrowed Heart|Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3|3"
)
files=()
for entry in "${tracks[@]}"; do
  IFS='|' read -r title source number <<<"$entry"
  out="$data/audio/$number.${source##*.}"
  ffmpeg -nostdin -v error -y -i "$library/$source" -map 0:a -c copy -map_metadata -1 \
    -metadata title="$title" -metadata artist="The Far Friends" -metadata album_artist="The Far Friends" \
    -metadata album="Borrowed Tunes" -metadata date=2024 -metadata genre=Folk -metadata track="$number" "$out"
  files+=("$out")
done

# The server: its own DATA_DIR, nothing pointing outside (no lookups, covers or lyrics).
(
  cd "$data"
  exec env -u DATABASE_URL -u STORAGE_BACKEND -u S3_BUCKET -u S3_ENDPOINT -u S3_PREFIX -u LOCAL_STORAGE_PATH \
    -u MUSICLIB_CONFIG -u JWT_SECRET -u LEGACY_SECRET_KEY -u ACOUSTID_API_KEY -u LOCAL_MEDIA_IMPORT_PATH \
    -u SUBSONIC_SOURCE_URL -u SUBSONIC_SOURCE_USERNAME -u SUBSONIC_SOURCE_PASSWORD -u SUBSONIC_SOURCE_API_KEY \
    DATA_DIR="$data" BIND_ADDRESS="127.0.0.1:$port" ADMIN_USERNAME="$user" ADMIN_PASSWORD="$password" \
    COVERART_ENABLED=false LRCLIB_BASE_URL="http://127.0.0.1:9" \
    "$binary" serve
) >"$data/server.log" 2>&1 &
server_pid=$!
node "$here/slow-link.mjs" "$link_port" "$base" "$rate" >"$data/slow-link.log" 2>&1 &
link_pid=$!
fail() { echo "$0: $*" >&2; kill "$server_pid" "$link_pid" 2>/dev/null || true; tail -n 20 "$data/server.log" >&2; exit 1; }

for _ in $(seq 1 150); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "$base/health" >/dev/null || fail "the friend's server did not start"
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);console.log(process.argv[1].split(".").reduce((o,k)=>o[k],v))})' "$1"; }
token=$(curl -sf "$base/api/v1/auth/login" -H 'content-type: application/json' \
  -d "{\"username\":\"$user\",\"password\":\"$password\"}" | json access_token) || fail "cannot sign in"
for file in "${files[@]}"; do
  curl -sf "$base/api/v1/tracks/upload" -H "authorization: Bearer $token" -F "file=@$file" >/dev/null \
    || fail "the upload of $file was refused"
done
app_password=$(curl -sf "$base/api/v1/users/me/legacy-password" -H "authorization: Bearer $token" | json password) \
  || fail "no app password"
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$link_port/health" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$link_port/health" >/dev/null || fail "the slow link did not start"

echo "friend's server on $base (through the slow link on :$link_port), ${#files[@]} tracks" >&2
echo "export SUBSONIC_SOURCE_URL=http://127.0.0.1:$link_port"
echo "export SUBSONIC_SOURCE_USERNAME=$user"
printf 'export SUBSONIC_SOURCE_PASSWORD=%q\n' "$app_password"
echo "export FRIEND_PIDS=\"$server_pid $link_pid\""
