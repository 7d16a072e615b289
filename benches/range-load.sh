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

file="${1:-$(dirname "$0")/../target/corpus/library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac}"
seconds="${2:-10}"
. "$(dirname "$0")/common.sh"
[ -f "$file" ] || { echo "no such file: $file" >&2; exit 2; }
need_packages wrk:wrk nginx:nginx-light jq:jq
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
size=$(stat -c %s "$file")
start_musiclib "$file"

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
