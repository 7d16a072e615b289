#!/usr/bin/env bash
# api-load.sh: 200 concurrent API clients with a mixed workload (browse /tracks, /albums and
# /artists pages, /search/library, /sync/changes, 256 KiB ranges of /stream) for a set time,
# on the embedded deployment and, when PostgreSQL and S3 are given, on the scale-out one (two
# `serve --no-worker` replicas sharing the clients, and a `worker`). Prints per request kind
# the requests, errors, p50/p95/p99 in ms, then the throughput and each process's peak RSS
# (VmHWM). Exits non-zero when any request failed. A second embedded run measures a server that
# imports a copy of the music while it is loaded (the issue 33 goal: under 300 MB throughout).
#
#   benches/api-load.sh [SECONDS] [CLIENTS] [MUSIC_FOLDER]
#
# Defaults: 180 s, 200 clients, the test corpus (target/corpus/library). The music is imported
# with `musiclib scan`, the jobs it queues (enrichment, sound analysis) are waited for through
# /metrics, and the measured processes are started fresh after that, so their peak RSS is the
# load's.
#
# Scale-out, besides the embedded run, when both are set:
#   MUSICLIB_BENCH_POSTGRES_URL  postgres://USER@HOST:PORT/DB (a database is created beside DB
#                                for the run and dropped after)
#   MUSICLIB_BENCH_S3_ENDPOINT   an S3 endpoint (http:// allowed), with
#   MUSICLIB_BENCH_S3_BUCKET (default musiclib-bench; must exist), MUSICLIB_BENCH_S3_ACCESS_KEY_ID
#   and MUSICLIB_BENCH_S3_SECRET_ACCESS_KEY (default test/test, as moto takes)
# Other settings: MUSICLIB_BENCH_ONLY=importing (the importing run alone),
# MUSICLIB_BENCH_USERS (accounts the clients share, default 20),
# MUSICLIB_BENCH_THINK_MS (mean pause between a client's requests, default 50),
# MUSICLIB_BIN (default target/release/musiclib: build it with `cargo build --release -p musiclib-bin`).
#
# The load client is Python asyncio + aiohttp (pinned), in a venv under target/bench-venv.
set -euo pipefail

seconds="${1:-180}"
clients="${2:-200}"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
folder="${3:-$repo/target/corpus/library}"
[ -d "$folder" ] || { echo "no music folder $folder (generate the corpus or pass one)" >&2; exit 2; }
users="${MUSICLIB_BENCH_USERS:-20}"
think_ms="${MUSICLIB_BENCH_THINK_MS:-50}"
need_packages jq:jq curl:curl
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

aiohttp_version=3.14.5
venv="$repo/target/bench-venv"
if ! "$venv/bin/python" -c "import aiohttp, sys; sys.exit(aiohttp.__version__ != '$aiohttp_version')" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "aiohttp==$aiohttp_version"
fi

password=bench-password
# Settings every process of a deployment shares (set by each run).
deployment=()
# Starts `musiclib ARGS…` with the deployment's settings, DATA_DIR=$1 and BIND_ADDRESS=$2;
# its pid in $launched.
launch() {
  local data="$1" address="$2"; shift 2
  mkdir -p "$data"
  env "${deployment[@]}" DATA_DIR="$data" BIND_ADDRESS="$address" RUST_LOG=warn "$bin" "$@" \
    >>"$work/musiclib.log" 2>&1 &
  launched=$!
  pids+=("$launched")
}
stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
wait_healthy() {
  for _ in $(seq 300); do curl -sf "$1/health" >/dev/null && return; sleep 0.1; done
  echo "$1 did not start; its log:" >&2; tail -20 "$work/musiclib.log" >&2; exit 1
}
admin_token() {
  curl -sf -X POST "$1/api/v1/auth/login" -H 'content-type: application/json' \
    -d "{\"username\":\"bench\",\"password\":\"$password\"}" | jq -r .access_token
}
# Waits until no job is queued or running (the scan's enrichment and sound analysis), read from
# the job gauges of /metrics.
wait_for_jobs() {
  local base="$1" token left
  token=$(admin_token "$base")
  for _ in $(seq 900); do
    # Empty (not 0) until /metrics answers with the job gauges.
    left=$(curl -sf "$base/metrics" -H "Authorization: Bearer $token" \
      | awk '/^musiclib_jobs\{/ { seen = 1; if ($0 ~ /state="(queued|running)"/) sum += $NF }
             END { if (seen) print sum + 0 }' || true)
    [ "$left" = 0 ] && return
    sleep 1
  done
  echo "warning: ${left:-an unknown number of} jobs still queued or running after 15 minutes; measuring anyway" >&2
}
# Registers the bench users on `base` (once per database) and prints their tokens as
# `--token T` arguments.
user_tokens() {
  local base="$1" index answer
  for index in $(seq "$users"); do
    answer=$(curl -sf -X POST "$base/api/v1/auth/register" -H 'content-type: application/json' \
      -d "{\"username\":\"listener$index\",\"password\":\"$password\"}" \
      || curl -sf -X POST "$base/api/v1/auth/login" -H 'content-type: application/json' \
      -d "{\"username\":\"listener$index\",\"password\":\"$password\"}")
    printf -- '--token %s ' "$(jq -r .access_token <<<"$answer")"
  done
}
load() { "$venv/bin/python" "$repo/benches/api-load.py" --clients "$clients" --seconds "$seconds" --think-ms "$think_ms" "$@"; }

echo "musiclib $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?') ($bin), $(nproc) cores, load client on the same machine"
status=0

# MUSICLIB_BENCH_ONLY=importing runs the importing run alone.
only="${MUSICLIB_BENCH_ONLY:-}"

# Embedded: SQLite and local files, one `serve` with its in-process workers.
if [ "$only" != importing ]; then
deployment=(LOCAL_MEDIA_IMPORT_PATH="$folder" ADMIN_USERNAME=bench ADMIN_PASSWORD="$password" COVERART_ENABLED=false)
data="$work/embedded"
env "${deployment[@]}" DATA_DIR="$data" RUST_LOG=error "$bin" scan 2>>"$work/musiclib.log" \
  | grep -E '^Scanned|^  (imported|failed)' || true
port=$(free_port)
base="http://127.0.0.1:$port"
launch "$data" "127.0.0.1:$port" serve
wait_healthy "$base"
wait_for_jobs "$base"
stop "$launched"
launch "$data" "127.0.0.1:$port" serve
server=$launched
wait_healthy "$base"
tokens=$(user_tokens "$base")
echo
echo "== embedded (SQLite + local disk, one serve)"
# shellcheck disable=SC2086
load --base "$base" $tokens --pid "$server" || status=1
stop "$server"
fi

# Embedded, importing while loaded: the first copy of the music is in the library (imported by
# `musiclib scan`, its enrichment and sound analysis still to do), a second copy lands in the
# folder, and the server scans it while the clients listen. Its peak RSS is the whole run's:
# start-up, the import, the worker's jobs and the load.
import_root="$work/importing"
mkdir -p "$import_root"
cp -r "$folder" "$import_root/first"
deployment=(LOCAL_MEDIA_IMPORT_PATH="$import_root" ADMIN_USERNAME=bench ADMIN_PASSWORD="$password" COVERART_ENABLED=false)
data="$work/embedded-importing"
env "${deployment[@]}" DATA_DIR="$data" RUST_LOG=error "$bin" scan 2>>"$work/musiclib.log" \
  | grep -E '^Scanned|^  (imported|failed)' || true
cp -r "$folder" "$import_root/second"
port=$(free_port)
base="http://127.0.0.1:$port"
launch "$data" "127.0.0.1:$port" serve
server=$launched
wait_healthy "$base"
tokens=$(user_tokens "$base")
admin=$(admin_token "$base")
scan_job=$(curl -sf -X POST "$base/api/v1/sources/local_folder/scan" -H "Authorization: Bearer $admin" | jq -r .job_id)
echo
echo "== embedded, importing while loaded (SQLite + local disk, one serve; scan job $scan_job)"
# shellcheck disable=SC2086
load --base "$base" $tokens --pid "$server" || status=1
jobs_left=$(curl -sf "$base/metrics" -H "Authorization: Bearer $admin" \
  | awk '/^musiclib_jobs\{/ && /state="(queued|running)"/ { sum += $NF } END { print sum + 0 }')
echo "scan: $(curl -sf "$base/api/v1/jobs/$scan_job" -H "Authorization: Bearer $admin" | jq -c '{state, imported: .progress.imported}'); jobs still queued or running at the end: $jobs_left"
stop "$server"

if [ "$only" = importing ]; then
  exit "$status"
fi
if [ -n "${MUSICLIB_BENCH_POSTGRES_URL:-}" ] && [ -n "${MUSICLIB_BENCH_S3_ENDPOINT:-}" ]; then
  need_packages psql:postgresql-client
  database="musiclib_bench_$(date +%s)"
  psql "$MUSICLIB_BENCH_POSTGRES_URL" -qc "CREATE DATABASE $database"
  drop_database() { psql "$MUSICLIB_BENCH_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true; }
  deployment=(
    DATABASE_URL="${MUSICLIB_BENCH_POSTGRES_URL%/*}/$database"
    STORAGE_BACKEND=s3
    S3_ENDPOINT="$MUSICLIB_BENCH_S3_ENDPOINT"
    S3_BUCKET="${MUSICLIB_BENCH_S3_BUCKET:-musiclib-bench}"
    S3_ACCESS_KEY_ID="${MUSICLIB_BENCH_S3_ACCESS_KEY_ID:-test}"
    S3_SECRET_ACCESS_KEY="${MUSICLIB_BENCH_S3_SECRET_ACCESS_KEY:-test}"
    S3_ALLOW_HTTP=true
    S3_PREFIX="$database"
    JWT_SECRET="a secret every replica of the bench shares"
    LEGACY_SECRET_KEY="a legacy key every replica of the bench shares"
    LOCAL_MEDIA_IMPORT_PATH="$folder"
    ADMIN_USERNAME=bench
    ADMIN_PASSWORD="$password"
    COVERART_ENABLED=false
  )
  env "${deployment[@]}" DATA_DIR="$work/scan" RUST_LOG=error "$bin" scan 2>>"$work/musiclib.log" \
    | grep -E '^Scanned|^  (imported|failed)' || true
  launch "$work/worker" 127.0.0.1:0 worker
  worker=$launched
  port_a=$(free_port)
  port_b=$(free_port)
  base_a="http://127.0.0.1:$port_a"
  base_b="http://127.0.0.1:$port_b"
  # One replica first: it creates the admin.
  launch "$work/replica-a" "127.0.0.1:$port_a" serve --no-worker
  replica_a=$launched
  wait_healthy "$base_a"
  wait_for_jobs "$base_a"
  # The worker's peak is the import's; start it again so its figure is the load's.
  stop "$worker"
  launch "$work/worker" 127.0.0.1:0 worker
  worker=$launched
  launch "$work/replica-b" "127.0.0.1:$port_b" serve --no-worker
  replica_b=$launched
  wait_healthy "$base_b"
  tokens=$(user_tokens "$base_a")
  echo
  echo "== scale-out (PostgreSQL + S3, two serve --no-worker replicas, one worker)"
  echo "pids: replica a $replica_a, replica b $replica_b, worker $worker"
  # shellcheck disable=SC2086
  load --base "$base_a" --base "$base_b" $tokens --pid "$replica_a" --pid "$replica_b" --pid "$worker" || status=1
  for pid in "$replica_a" "$replica_b" "$worker"; do stop "$pid"; done
  drop_database
else
  echo
  echo "(scale-out skipped: set MUSICLIB_BENCH_POSTGRES_URL and MUSICLIB_BENCH_S3_ENDPOINT)"
fi
exit "$status"
