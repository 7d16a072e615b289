#!/usr/bin/env bash
# import-memory.sh: importing a large folder, and the memory the import takes as it goes.
# Generates the large corpus of FILES tagged files (shared/corpus/make-corpus.sh --large, into
# target/corpus-large-FILES; a rerun reuses it), imports it with `musiclib scan` into a fresh
# library, and samples the process's resident memory (VmRSS) every half second. Prints the
# time, the files per second, the RSS at each tenth of the run and the peak (VmHWM).
# A flat import holds the same RSS from its first tenths to its last, and the same peak at
# twice the files.
#
#   benches/import-memory.sh [FILES=10000]
#
# SQLite and local disk always; PostgreSQL (and local disk) too when
# MUSICLIB_BENCH_POSTGRES_URL is set (postgres://USER@HOST:PORT/DB: a database is created
# beside DB and dropped after). MUSICLIB_BENCH_CORPUS=DIR imports another folder instead.
set -euo pipefail

files="${1:-10000}"
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_packages jq:jq
shared="${MUSICLIB_SHARED:-$repo/../shared}"
folder="${MUSICLIB_BENCH_CORPUS:-}"
if [ -z "$folder" ]; then
  corpus="$repo/target/corpus-large-$files"
  echo "generating $files files in $corpus (make-corpus.sh --large; reused when up to date)"
  "$shared/corpus/make-corpus.sh" --large "$files" "$corpus" >"$work/corpus.log" 2>&1 \
    || { cat "$work/corpus.log" >&2; exit 1; }
  folder="$corpus/library"
fi
echo "musiclib $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(find "$folder" -type f | wc -l) files, $(du -sh "$folder" | cut -f1)"

# Runs `musiclib scan` with the given settings, sampling its RSS; prints the summary.
run_import() {
  local name="$1"; shift
  echo
  echo "== $name"
  env "$@" LOCAL_MEDIA_IMPORT_PATH="$folder" COVERART_ENABLED=false SOUND_ANALYSIS=false LOUDNESS_ANALYSIS=false \
    RUST_LOG=error "$bin" scan >"$work/scan.out" 2>>"$work/musiclib.log" &
  local pid=$! samples="$work/rss.$name" hwm=0 started
  pids+=("$pid")
  started=$(date +%s.%N)
  : >"$samples"
  while kill -0 "$pid" 2>/dev/null; do
    local rss now
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    now=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -z "$rss" ] || echo "$rss" >>"$samples"
    [ -z "$now" ] || hwm=$now
    sleep 0.5
  done
  wait "$pid" || { cat "$work/scan.out" "$work/musiclib.log" >&2; echo "$name: scan failed" >&2; exit 1; }
  local took imported
  took=$(echo "$(date +%s.%N) - $started" | bc)
  imported=$(awk '/^  imported / {print $2}' "$work/scan.out")
  printf 'imported %s files in %.1f s: %.0f files/s\n' "$imported" "$took" "$(echo "$imported / $took" | bc -l)"
  # RSS at the end of each tenth of the samples, in MB.
  awk '{ rss[NR] = $1 } END {
    line = "RSS MB at each tenth:";
    for (i = 1; i <= 10; i++) { at = int(NR * i / 10); if (at < 1) at = 1; line = line sprintf(" %d", rss[at] / 1024) }
    print line }' "$samples"
  printf 'peak RSS: %d MB\n' "$((hwm / 1024))"
}

need_packages bc:bc
run_import sqlite DATA_DIR="$work/sqlite"
if [ -n "${MUSICLIB_BENCH_POSTGRES_URL:-}" ]; then
  need_packages psql:postgresql-client
  database="musiclib_import_$(date +%s)"
  psql "$MUSICLIB_BENCH_POSTGRES_URL" -qc "CREATE DATABASE $database" >/dev/null
  trap 'psql "$MUSICLIB_BENCH_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true; cleanup' EXIT
  run_import postgres DATA_DIR="$work/postgres" DATABASE_URL="${MUSICLIB_BENCH_POSTGRES_URL%/*}/$database"
fi
