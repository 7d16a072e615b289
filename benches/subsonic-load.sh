#!/usr/bin/env bash
# The Subsonic interface next to /api/v1 on the same server, in one run: what the legacy
# protocol costs over the JSON API for the same work.
#   1. auth only: /rest/ping (token t+s on the app password) vs GET /api/v1/users/me (JWT)
#   2. a page of albums: /rest/getAlbumList2 type=newest size=50 f=json vs GET /api/v1/albums
#   3. seeking: 256 KiB ranges of one file via /rest/stream vs /api/v1/stream/{id}
# Usage: benches/subsonic-load.sh [MUSIC_FOLDER] [SECONDS] (default: the test corpus, 10 s).
# Build first: cargo build --release -p musiclib-bin
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_packages wrk:wrk jq:jq
folder="${1:-$repo/target/corpus/library}"
seconds="${2:-10}"
[ -d "$folder" ] || { echo "no music folder $folder (generate the corpus or pass one)" >&2; exit 2; }

port=$(free_port)
DATA_DIR="$work/data" BIND_ADDRESS="127.0.0.1:$port" RUST_LOG=warn LOCAL_MEDIA_IMPORT_PATH="$folder" \
  ADMIN_USERNAME=bench ADMIN_PASSWORD=bench-password "$bin" serve >"$work/musiclib.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"
token=$(curl -sf -X POST "$base/api/v1/auth/login" -H 'content-type: application/json' \
  -d '{"username":"bench","password":"bench-password"}' | jq -r .access_token)
password=$(curl -sf "$base/api/v1/users/me/legacy-password" -H "Authorization: Bearer $token" | jq -r .password)
salt=5a17
auth="u=bench&t=$(printf '%s%s' "$password" "$salt" | md5sum | cut -d' ' -f1)&s=$salt&v=1.16.1&c=bench"
curl -sf "$base/rest/startScan?$auth" >/dev/null
for _ in $(seq 600); do
  curl -sf "$base/rest/getScanStatus?$auth&f=json" | jq -e '.["subsonic-response"].scanStatus.scanning == false' >/dev/null && break
  sleep 0.2
done
id=$(curl -sf "$base/rest/search3?$auth&f=json&query=&songCount=50&artistCount=0&albumCount=0" \
  | jq -r '[.["subsonic-response"].searchResult3.song[] | select(.size > 2000000)][0].id')

rate() { wrk -t2 -c"$1" -d"${seconds}s" "${@:2}" | awk '/Requests\/sec/ { print $2 }'; }
compare() {
  local name="$1" connections="$2" legacy="$3" api="$4"; shift 4
  local a b
  a=$(rate "$connections" "$@" "$legacy")
  b=$(rate "$connections" -H "Authorization: Bearer $token" "$@" "$api")
  printf '%-34s /rest %9s req/s   /api/v1 %9s req/s   ratio %s\n' "$name" "$a" "$b" \
    "$(python3 -c "print(f'{$a/$b:.2f}')")"
}
echo "musiclib $(git -C "$repo" rev-parse --short HEAD), $seconds s per run, $(nproc) cores, load on the same machine"
compare "auth only (ping vs users/me)" 32 "$base/rest/ping?$auth" "$base/api/v1/users/me"
compare "50 newest albums" 32 "$base/rest/getAlbumList2?$auth&type=newest&size=50&f=json" "$base/api/v1/albums?sort=-created_at&limit=50"
compare "256 KiB ranges of one file" 32 "$base/rest/stream?$auth&id=$id" "$base/api/v1/stream/$id" -H "Range: bytes=1048576-1310719"
