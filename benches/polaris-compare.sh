#!/usr/bin/env bash
# polaris-compare.sh: musiclib and Polaris side by side on the same folder of music, for the
# requests both have. Imports FOLDER into a fresh musiclib (SQLite, `musiclib scan`), starts
# the release binary (`serve --no-worker`), then drives each pair of requests with wrk
# (4 connections, SECONDS each, one server at a time; ids, offsets and queries drawn at random
# per request from the same lists) and prints p50/p95/p99 in ms for both and the p50 ratio.
# Then the whole album and artist lists as a client reads them (musiclib in pages of 200,
# Polaris in one answer), median of 20 reads. Searches are of two letters or more: Polaris
# indexes pairs of letters and finds nothing for one.
#
#   benches/polaris-compare.sh POLARIS_URL [SECONDS=5] [FOLDER=target/corpus-large-10000/library]
#
# POLARIS_URL is a running Polaris (0.16) that has indexed the same FOLDER and has a user
# MUSICLIB_BENCH_POLARIS_USER (default bench) with password MUSICLIB_BENCH_POLARIS_PASSWORD
# (default bench-password). This project neither builds nor ships Polaris: bring its source,
# `cargo build --release`, and start it with a configuration such as
#
#   [[mount_dirs]]
#   source = "FOLDER"
#   name = "music"
#   [[users]]
#   name = "bench"
#   admin = true
#   initial_password = "bench-password"
#
# (`polaris -f -c polaris.toml --data DIR --cache DIR -p PORT`). Generate the folder with
# `benches/import-memory.sh 10000` or shared/corpus/make-corpus.sh --large 10000.
set -euo pipefail

polaris="${1:?usage: benches/polaris-compare.sh POLARIS_URL [SECONDS] [FOLDER]}"
seconds="${2:-5}"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
folder="${3:-$repo/target/corpus-large-10000/library}"
[ -d "$folder" ] || { echo "no music folder $folder" >&2; exit 2; }
need_packages wrk:wrk jq:jq curl:curl bc:bc
lua="$repo/benches/lua/catalog.lua"
polaris="${polaris%/}"
password=bench-password

# Polaris: a token, and its index finished.
polaris_token=$(curl -sf -X POST "$polaris/api/auth" -H 'content-type: application/json' \
  -d "{\"username\":\"${MUSICLIB_BENCH_POLARIS_USER:-bench}\",\"password\":\"${MUSICLIB_BENCH_POLARIS_PASSWORD:-bench-password}\"}" \
  | jq -r .token) || { echo "cannot log in to Polaris at $polaris" >&2; exit 2; }
for _ in $(seq 600); do
  status=$(curl -sf "$polaris/api/index_status" -H "Authorization: Bearer $polaris_token" -H 'Accept-Version: 8')
  [ "$(jq -r .state <<<"$status")" != UpToDate ] || break
  sleep 1
done
echo "Polaris at $polaris: $(jq -r .num_songs_indexed <<<"$status") songs indexed in $(jq -r '(.last_end_time - .last_start_time) / 1000' <<<"$status") s"

# musiclib: the same folder imported, then served.
started=$(date +%s.%N)
env DATA_DIR="$work/data" LOCAL_MEDIA_IMPORT_PATH="$folder" ADMIN_USERNAME=bench ADMIN_PASSWORD="$password" \
  COVERART_ENABLED=false SOUND_ANALYSIS=false LOUDNESS_ANALYSIS=false RUST_LOG=error "$bin" scan >"$work/scan.out" 2>>"$work/musiclib.log"
echo "musiclib $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'): $(awk '/^  imported / {print $2}' "$work/scan.out") tracks imported in $(printf '%.0f' "$(echo "$(date +%s.%N) - $started" | bc)") s"
port=$(free_port)
base="http://127.0.0.1:$port"
env DATA_DIR="$work/data" BIND_ADDRESS="127.0.0.1:$port" ADMIN_USERNAME=bench ADMIN_PASSWORD="$password" \
  SOUND_ANALYSIS=false LOUDNESS_ANALYSIS=false RUST_LOG=warn \
  "$bin" serve --no-worker >>"$work/musiclib.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do curl -sf "$base/health" >/dev/null && break; sleep 0.1; done
token=$(curl -sf -X POST "$base/api/v1/auth/login" -H 'content-type: application/json' \
  -d "{\"username\":\"bench\",\"password\":\"$password\"}" | jq -r .access_token)
app_password=$(curl -sf "$base/api/v1/users/me/legacy-password" -H "Authorization: Bearer $token" | jq -r .password)
albums=$(curl -sf "$base/api/v1/albums?limit=1" -H "Authorization: Bearer $token" | jq .total)
artists=$(curl -sf "$base/api/v1/artists?limit=1" -H "Authorization: Bearer $token" | jq .total)
echo "$albums albums, $artists artists; $(nproc) cores, both servers and wrk on this machine"

# The same 50 albums and 50 artists on both: musiclib ids, Polaris paths (names without commas,
# which separate the list).
curl -sf "$base/api/v1/albums?limit=200&sort=artist" -H "Authorization: Bearer $token" \
  | jq -r 'limit(50; .items[] | select(.artist != null and ((.title + .artist) | contains(",") | not)))
      | [.id, "\(.title | @uri)/by/\(.artist | @uri)"] | @tsv' >"$work/albums.tsv"
curl -sf "$base/api/v1/artists?limit=200" -H "Authorization: Bearer $token" \
  | jq -r 'limit(50; .items[] | select(.name | contains(",") | not)) | [.id, (.name | @uri)] | @tsv' >"$work/artists.tsv"
list() { cut -f"$2" "$work/$1.tsv" | paste -sd,; }

# name | musiclib target | Polaris target | largest offset | queries for musiclib | for Polaris
pairs() {
  cat <<LIST
search two letters|/api/v1/search/library?q={q}|/api/search/{q}|0|lo,ni,ar,he|lo,ni,ar,he
search a word|/api/v1/search/library?q={q}|/api/search/{q}|0|love,night,river,garden|love,night,river,garden
recent albums, 100 at an offset|/api/v1/albums?sort=-created_at&limit=100&offset={offset}|/api/albums/recent?count=100&offset={offset}|$((albums - 100))||
random albums, 100|/rest/getAlbumList2?u=bench&p=$app_password&v=1.16.1&c=bench&f=json&type=random&size=100|/api/albums/random?count=100|0||
one album and its tracks|/api/v1/albums/{q}/tracks|/api/album/{q}|0|$(list albums 1)|$(list albums 2)
one artist and their albums|/api/v1/artists/{q}/albums|/api/artist/{q}|0|$(list artists 1)|$(list artists 2)
albums, 200 at an offset (Polaris: all)|/api/v1/albums?limit=200&offset={offset}|/api/albums|$((albums - 200))||
artists, 200 at an offset (Polaris: all)|/api/v1/artists?limit=200&offset={offset}|/api/artists|$((artists > 200 ? artists - 200 : 0))||
LIST
}

drive() { # base token header target offset queries
  BENCH_PATH="$4" BENCH_MAX_OFFSET="$5" BENCH_QUERIES="$6" BENCH_TOKEN="$2" BENCH_HEADER="$3" \
    wrk -t1 -c4 -d"${seconds}s" --timeout 10s -s "$lua" "$1" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}'
}
printf '%-42s %28s   %28s %8s\n' '' 'musiclib p50/p95/p99 ms' 'Polaris p50/p95/p99 ms' 'p50 P/m'
while IFS='|' read -r name ours theirs max_offset our_queries their_queries; do
  [ -n "$name" ] || continue
  probe="${ours//\{offset\}/0}"
  body=$(curl -sf "$base${probe//\{q\}/${our_queries%%,*}}" -H "Authorization: Bearer $token") \
    || { echo "$name: musiclib $probe failed" >&2; exit 1; }
  if [[ "$ours" == /rest/* ]] && ! grep -q '"status":"ok"' <<<"$body"; then
    echo "$name: $body" >&2; exit 1
  fi
  probe="${theirs//\{offset\}/0}"
  curl -sf -o /dev/null "$polaris${probe//\{q\}/${their_queries%%,*}}" -H "Authorization: Bearer $polaris_token" -H 'Accept-Version: 8' \
    || { echo "$name: Polaris $probe failed" >&2; exit 1; }
  # The first search reads the search text into memory in the background (docs/api.md).
  [[ "$ours" != */search/library* ]] || sleep 2
  read -r _ e1 a50 a95 a99 < <(drive "$base" "$([[ "$ours" == /rest/* ]] || echo "$token")" "" "$ours" "$max_offset" "$our_queries")
  read -r _ e2 b50 b95 b99 < <(drive "$polaris" "$polaris_token" "Accept-Version: 8" "$theirs" "$max_offset" "$their_queries")
  [ "$e1$e2" = 00 ] || echo "$name: errors: musiclib $e1, Polaris $e2" >&2
  printf '%-42s %28s   %28s %8.2f\n' "$name" "$a50 / $a95 / $a99" "$b50 / $b95 / $b99" "$(echo "$b50 / $a50" | bc -l)"
done < <(pairs)

# Whole lists, as a client reads them: the sum of the requests' times, median of 20 reads.
whole() { # base token header path-with-offset count page
  local reads=() i
  for i in $(seq 20); do
    local offset=0 served=0 took
    while :; do
      took=$(curl -sf -o /dev/null -w '%{time_total}' "$1${4//\{offset\}/$offset}" -H "Authorization: Bearer $2" ${3:+-H "$3"})
      served=$(echo "$served + $took" | bc)
      offset=$((offset + $6))
      [ "$6" -gt 0 ] && [ "$offset" -lt "$5" ] || break
    done
    reads+=("$served")
  done
  printf '%s\n' "${reads[@]}" | sort -n | sed -n 10p
}
for kind in "albums|$albums" "artists|$artists"; do
  what="${kind%|*}" count="${kind#*|}"
  ours=$(whole "$base" "$token" "" "/api/v1/$what?limit=200&offset={offset}" "$count" 200)
  theirs=$(whole "$polaris" "$polaris_token" "Accept-Version: 8" "/api/$what" "$count" 0)
  printf 'every %-9s musiclib %6.1f ms in %d pages, Polaris %6.1f ms in one\n' "$what:" \
    "$(echo "$ours * 1000" | bc)" "$(((count + 199) / 200))" "$(echo "$theirs * 1000" | bc)"
done
