#!/usr/bin/env bash
# web-rows.sh: the web player's track table on a seeded library of TRACKS tracks (rows only,
# `seed-library`), in Chromium: rows in the page, scrolling frame times, a jump to the
# middle (benches/web-rows.mjs). Uses the debug or release binary beside the seeder
# (MUSICLIB_BIN, default target/release/musiclib, else target/debug/musiclib) with web/dist.
#
#   benches/web-rows.sh [TRACKS=100000]
set -euo pipefail
tracks="${1:-100000}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MUSICLIB_BIN:-$repo/target/release/musiclib}"
[ -x "$bin" ] || bin="$repo/target/debug/musiclib"
seeder="$(dirname "$bin")/seed-library"
[ -x "$seeder" ] || { echo "build first: cargo build -p musiclib-benches --bin seed-library" >&2; exit 2; }
[ -f "$repo/web/dist/index.html" ] || { echo "build the web player first: .ci/web.sh $bin" >&2; exit 2; }
data="$(mktemp -d /tmp/musiclib-web-rows.XXXXXX)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$data"' EXIT
"$seeder" --data-dir "$data" --tracks "$tracks" --password bench-password >/dev/null
DATA_DIR="$data" BIND_ADDRESS="127.0.0.1:$port" "$bin" serve --no-worker >"$data/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
MUSICLIB_URL="http://127.0.0.1:$port" MUSICLIB_USER=bench MUSICLIB_PASSWORD=bench-password \
  node "$repo/benches/web-rows.mjs"
