#!/usr/bin/env bash
# range-load.sh: random 256 KiB byte ranges of one file over 64 connections on loopback, against
# musiclib (`/api/v1/stream/{id}`, embedded default: local disk) and against nginx serving the
# same file, side by side in one run. Prints requests/s of each and the ratio (goal >= 0.9).
#
#   benches/range-load.sh [FILE] [SECONDS]
#
# Needs: a release build (`cargo build --release -p musiclib-bin`), wrk and nginx (installed
# with apt-get when missing), curl and jq. FILE defaults to a FLAC of the test corpus.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
file="${1:-$repo/target/corpus/library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac}"
seconds="${2:-10}"
bin="$repo/target/release/musiclib"
[ -x "$bin" ] || { echo "build first: cargo build --release -p musiclib-bin" >&2; exit 2; }
[ -f "$file" ] || { echo "no such file: $file" >&2; exit 2; }
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/dev/null
fi
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"

work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
size=$(stat -c %s "$file")

# musiclib, embedded default.
mport=$(free_port)
DATA_DIR="$work/data" BIND_ADDRESS="127.0.0.1:$mport" RUST_LOG=warn "$bin" serve --no-worker >"$work/musiclib.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$mport/health" >/dev/null && break; sleep 0.1; done
api="http://127.0.0.1:$mport/api/v1"
token=$(curl -sf -X POST "$api/auth/register" -H 'content-type: application/json' \
  -d '{"username":"bench","password":"bench-password"}' | jq -r .access_token)
id=$(curl -sf -X POST "$api/tracks/upload" -H "Authorization: Bearer $token" -F "file=@$file" | jq -r .id)

# nginx on the same bytes.
nport=$(free_port)
mkdir -p "$work/www"
cp "$file" "$work/www/track"
# nginx workers run as an unprivileged user.
chmod 755 "$work" "$work/www"
chmod 644 "$work/www/track"
cat >"$work/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  server { listen 127.0.0.1:$nport; root $work/www; }
}
EOF
"$nginx_bin" -c "$work/nginx.conf" -p "$work" &
pids+=($!)
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$nport/track" && break; sleep 0.1; done

cat >"$work/ranges.lua" <<EOF
local size = $size
local chunk = 262144
math.randomseed(42)
request = function()
  local start = math.random(0, size - chunk)
  wrk.headers["Range"] = "bytes=" .. start .. "-" .. (start + chunk - 1)
  return wrk.format(nil)
end
EOF

run() { wrk -t2 -c64 -d"${seconds}s" -s "$work/ranges.lua" "$1" | awk '/Requests\/sec/ {print $2} /Non-2xx/ {print "errors:" $NF > "/dev/stderr"}'; }
echo "file: $file ($size bytes), 64 connections, random 256 KiB ranges, ${seconds}s each"
m=$(run "$api/stream/$id?token=$token")
n=$(run "http://127.0.0.1:$nport/track")
m2=$(run "$api/stream/$id?token=$token")
n2=$(run "http://127.0.0.1:$nport/track")
python3 - "$m" "$n" "$m2" "$n2" <<'EOF'
import sys
m, n, m2, n2 = map(float, sys.argv[1:])
print(f"musiclib: {m:.0f} and {m2:.0f} req/s; nginx: {n:.0f} and {n2:.0f} req/s; ratio {(m + m2) / (n + n2):.2f} (goal >= 0.9)")
EOF
