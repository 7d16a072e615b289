#!/usr/bin/env bash
# catalog-load.sh: reading a large catalogue through the real server. Seeds a library of
# TRACKS tracks quickly (rows only, no audio: `seed-library`, with a user's 20,000 plays,
# 5,000 likes and 500 playlists), starts the release binary on it (`serve --no-worker`), and
# drives each request with wrk (4 connections, SECONDS each; offsets and queries drawn at
# random per request), printing requests, errors, p50/p95/p99 in ms per request. Then the
# whole-library listings sync clients make (`/sync/changes` from nothing, Subsonic `search3`
# pages of 500) in seconds, and the server's peak RSS after 32 concurrent clients.
#
#   benches/catalog-load.sh [TRACKS=100000] [SECONDS=5]
#
# SQLite always; PostgreSQL too when MUSICLIB_BENCH_POSTGRES_URL is set
# (postgres://USER@HOST:PORT/DB: a database is created beside DB and dropped after, unless
# MUSICLIB_BENCH_KEEP is set). MUSICLIB_BENCH_KEEP=DIR keeps the seeded libraries in DIR (and
# the PostgreSQL database) for the next run: seeding 1,000,000 tracks takes a while.
# MUSICLIB_BENCH_ONLY=sqlite|postgres runs one backend. MUSICLIB_BENCH_REQUESTS=REGEX times
# only the requests and whole-library listings whose name matches ('full' for the two
# listings alone), and not the memory. Needs `cargo build --release -p
# musiclib-bin -p musiclib-benches` (the seeder is target/release/seed-library).
set -euo pipefail

tracks="${1:-100000}"
seconds="${2:-5}"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# The seeder beside the binary, else this checkout's (MUSICLIB_BIN may be another build).
seeder="$(dirname "$bin")/seed-library"
[ -x "$seeder" ] || seeder="$repo/target/release/seed-library"
[ -x "$seeder" ] || { echo "build first: cargo build --release -p musiclib-benches --bin seed-library" >&2; exit 2; }
need_packages wrk:wrk jq:jq curl:curl
lua="$repo/benches/lua/catalog.lua"
keep="${MUSICLIB_BENCH_KEEP:-}"
only_requests="${MUSICLIB_BENCH_REQUESTS:-}"

# name | target ({offset}, {q}) | largest offset | offset step | queries
requests() {
  local t=$((tracks - 50)) al=$((tracks / 10 - 50)) ar=$((tracks / 100 - 50))
  local s="u=bench&p=$app_password&v=1.16.1&c=bench&f=json"
  cat <<LIST
tracks (default sort)|/api/v1/tracks?limit=50&offset={offset}|$t|1|
tracks sort=title|/api/v1/tracks?limit=50&sort=title&offset={offset}|$t|1|
tracks sort=-title|/api/v1/tracks?limit=50&sort=-title&offset={offset}|$t|1|
tracks sort=artist|/api/v1/tracks?limit=50&sort=artist&offset={offset}|$t|1|
tracks sort=album|/api/v1/tracks?limit=50&sort=album&offset={offset}|$t|1|
tracks sort=year|/api/v1/tracks?limit=50&sort=year&offset={offset}|$t|1|
tracks sort=track_number|/api/v1/tracks?limit=50&sort=track_number&offset={offset}|$t|1|
tracks sort=duration|/api/v1/tracks?limit=50&sort=duration&offset={offset}|$t|1|
tracks sort=-created_at|/api/v1/tracks?limit=50&sort=-created_at&offset={offset}|$t|1|
tracks sort=updated_at|/api/v1/tracks?limit=50&sort=updated_at&offset={offset}|$t|1|
tracks genre=Jazz|/api/v1/tracks?limit=50&genre=Jazz&offset={offset}|$((tracks / 20))|1|
albums (default sort)|/api/v1/albums?limit=50&offset={offset}|$al|1|
albums sort=artist|/api/v1/albums?limit=50&sort=artist&offset={offset}|$al|1|
albums sort=-year|/api/v1/albums?limit=50&sort=-year&offset={offset}|$al|1|
albums sort=-created_at|/api/v1/albums?limit=50&sort=-created_at&offset={offset}|$al|1|
artists|/api/v1/artists?limit=50&offset={offset}|$ar|1|
playlists|/api/v1/playlists?limit=50&offset={offset}|450|1|
history|/api/v1/history?limit=50&offset={offset}|19950|1|
likes|/api/v1/likes?limit=50&offset={offset}|4950|1|
search one letter|/api/v1/search/library?q={q}|0|1|e,a,o,z,q,x,%C3%B1,1
search two letters|/api/v1/search/library?q={q}|0|1|lo,ni,he,ve,zz,qu,xy,%C3%B3n
search a word|/api/v1/search/library?q={q}|0|1|love,night,river,thunder,velvet,coraz%C3%B3n,nothing
subsonic search3 '' 500 songs|/rest/search3?$s&query=&artistCount=0&albumCount=0&songCount=500&songOffset={offset}|$((tracks - 500))|1|
subsonic getAlbumList2 500 by name|/rest/getAlbumList2?$s&type=alphabeticalByName&size=500&offset={offset}|$((tracks / 10 - 500))|1|
subsonic getAlbumList2 500 newest|/rest/getAlbumList2?$s&type=newest&size=500&offset={offset}|$((tracks / 10 - 500))|1|
LIST
}

run_backend() {
  local backend="$1" database_url="$2" data="$3"
  echo
  echo "== $backend, $tracks tracks"
  local started=$SECONDS
  "$seeder" --data-dir "$data" ${database_url:+--database-url "$database_url"} --tracks "$tracks"
  echo "seeding: $((SECONDS - started)) s"
  local port; port=$(free_port)
  local base="http://127.0.0.1:$port"
  env DATA_DIR="$data" ${database_url:+DATABASE_URL="$database_url"} BIND_ADDRESS="127.0.0.1:$port" \
    SOUND_ANALYSIS=false LOUDNESS_ANALYSIS=false RUST_LOG=warn "$bin" serve --no-worker >>"$work/musiclib.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do curl -sf "$base/health" >/dev/null && break; sleep 0.1; done
  token=$(curl -sf -X POST "$base/api/v1/auth/login" -H 'content-type: application/json' \
    -d '{"username":"bench","password":"bench-password"}' | jq -r .access_token)
  app_password=$(curl -sf "$base/api/v1/users/me/legacy-password" -H "Authorization: Bearer $token" | jq -r .password)
  printf '%-36s %8s %6s %8s %8s %8s %7s\n' request requests errors p50_ms p95_ms p99_ms req/s
  while IFS='|' read -r name target max_offset step queries; do
    [ -n "$name" ] || continue
    [[ -z "$only_requests" || "$name" =~ $only_requests ]] || continue
    # Every kind answers before it is timed (a Subsonic error is a 200 with status "failed").
    local probe="${target//\{offset\}/$max_offset}"
    probe="${probe//\{q\}/${queries%%,*}}"
    local body; body=$(curl -sf "$base$probe" -H "Authorization: Bearer $token") \
      || { echo "$name: $probe failed" >&2; exit 1; }
    if [[ "$target" == /rest/* ]] && ! grep -q '"status":"ok"' <<<"$body"; then
      echo "$name: $body" >&2; exit 1
    fi
    # The first search reads every track's search text into memory, in the background
    # (docs/api.md, "/search/library"), and the first deep page of a list finds its places (its
    # marks or its order: one walk of the list, about a second at 1,000,000 tracks); the
    # figures are of the requests after that (5 s for the search names at 1,000,000 tracks).
    [[ "$target" != */search/library* ]] || sleep $((tracks >= 1000000 ? 5 : 2))
    [ "$max_offset" -lt 500 ] || sleep $((tracks >= 1000000 ? 3 : 1))
    local line
    line=$(BENCH_PATH="$target" BENCH_MAX_OFFSET="$max_offset" BENCH_STEP="$step" BENCH_QUERIES="$queries" \
      BENCH_TOKEN="$([[ "$target" == /rest/* ]] || echo "$token")" \
      wrk -t1 -c4 -d"${seconds}s" --timeout 10s -s "$lua" "$base" | awk '/^RESULT/ {print $2, $3, $4, $5, $6, $7}')
    read -r n errors p50 p95 p99 rate <<<"$line"
    printf '%-36s %8s %6s %8s %8s %8s %7s\n' "$name" "$n" "$errors" "$p50" "$p95" "$p99" "$rate"
  done < <(requests)
  # A new device's first pull: every page of /sync/changes from nothing. Two figures: the
  # wall time (with curl and jq, which parses each page to find the next cursor) and the
  # server's part, the sum of the requests' times as curl saw them.
  local since=0 more=true pages=0 items=0 t0 served=0 took
  if [[ -z "$only_requests" || "sync/changes full pull" =~ $only_requests ]]; then
  t0=$(date +%s.%N)
  while [ "$more" = true ]; do
    took=$(curl -sf -o "$work/page.json" -w '%{time_total}' "$base/api/v1/sync/changes?since=$since&limit=5000" -H "Authorization: Bearer $token")
    served=$(echo "$served + $took" | bc)
    read -r since more n < <(jq -r '[.cursor, .has_more, (.tracks | length) + (.likes | length) + (.plays | length) + (.playlists | length)] | @tsv' "$work/page.json")
    pages=$((pages + 1)); items=$((items + n))
  done
  printf 'sync/changes full pull: %d items in %d pages, %.2f s (requests %.2f s)\n' "$items" "$pages" "$(echo "$(date +%s.%N) - $t0" | bc)" "$served"
  fi
  # How Subsonic sync apps list a library: search3 with an empty query, pages of 500.
  local offset=0 count=500 songs=0
  served=0
  if [[ -z "$only_requests" || "subsonic search3 full listing" =~ $only_requests ]]; then
  t0=$(date +%s.%N)
  while [ "$count" -eq 500 ]; do
    took=$(curl -sf -o "$work/page.json" -w '%{time_total}' "$base/rest/search3?u=bench&p=$app_password&v=1.16.1&c=bench&f=json&query=&artistCount=0&albumCount=0&songCount=500&songOffset=$offset")
    served=$(echo "$served + $took" | bc)
    count=$(jq '."subsonic-response".searchResult3.song | length' "$work/page.json")
    songs=$((songs + count)); offset=$((offset + 500))
  done
  printf 'subsonic search3 full listing: %d songs in %d pages, %.2f s (requests %.2f s)\n' "$songs" "$((offset / 500))" "$(echo "$(date +%s.%N) - $t0" | bc)" "$served"
  fi
  if [ -n "$only_requests" ]; then
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    return
  fi

  # 32 concurrent clients over four kinds of list, then the peak resident memory.
  local kinds=("/api/v1/tracks?limit=50&sort=artist&offset={offset}|$((tracks - 50))"
    "/api/v1/albums?limit=50&offset={offset}|$((tracks / 10 - 50))"
    "/api/v1/search/library?q={q}|0"
    "/rest/search3?u=bench&p=$app_password&v=1.16.1&c=bench&f=json&query=&artistCount=0&albumCount=0&songCount=500&songOffset={offset}|$((tracks - 500))")
  local waits=()
  for kind in "${kinds[@]}"; do
    BENCH_PATH="${kind%|*}" BENCH_MAX_OFFSET="${kind##*|}" BENCH_QUERIES="e,lo,love,ni,velvet" BENCH_TOKEN="$token" \
      wrk -t1 -c8 -d"${seconds}s" --timeout 10s -s "$lua" "$base" >"$work/mixed.$RANDOM" 2>&1 &
    waits+=($!)
  done
  wait "${waits[@]}"
  printf 'peak RSS after 32 concurrent clients: %d MB\n' "$(($(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status") / 1024))"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}

need_packages bc:bc
only="${MUSICLIB_BENCH_ONLY:-}"
if [ -z "$only" ] || [ "$only" = sqlite ]; then
  run_backend sqlite "" "${keep:-$work}/sqlite-$tracks"
fi
if [ -n "${MUSICLIB_BENCH_POSTGRES_URL:-}" ] && { [ -z "$only" ] || [ "$only" = postgres ]; }; then
  need_packages psql:postgresql-client
  database="musiclib_catalog_$tracks"
  admin_url="$MUSICLIB_BENCH_POSTGRES_URL"
  url="${admin_url%/*}/$database"
  if [ -z "$keep" ] || ! psql "$url" -qc 'SELECT 1' >/dev/null 2>&1; then
    psql "$admin_url" -qc "DROP DATABASE IF EXISTS $database" >/dev/null
    psql "$admin_url" -qc "CREATE DATABASE $database" >/dev/null
  fi
  [ -n "$keep" ] || trap 'psql "$admin_url" -qc "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true; cleanup' EXIT
  run_backend postgres "$url" "${keep:-$work}/postgres-$tracks"
fi
