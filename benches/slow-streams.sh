#!/usr/bin/env bash
# slow-streams.sh: 1,000 concurrent listeners, each reading one stream at a listener's pace,
# against musiclib (`/api/v1/stream/{id}`, embedded default) and nginx serving the same file,
# side by side. Prints each server's peak RSS and the errors (goal: musiclib <= 150 MB, none).
#
#   benches/slow-streams.sh [FILE] [CONNECTIONS] [SECONDS]
#
# Needs a release build (`cargo build --release -p musiclib-bin`); installs nginx and jq.
set -euo pipefail

file="${1:-$(dirname "$0")/../target/corpus/library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac}"
connections="${2:-1000}"
seconds="${3:-20}"
. "$(dirname "$0")/common.sh"
[ -f "$file" ] || { echo "no such file: $file" >&2; exit 2; }
need_packages nginx:nginx-light jq:jq
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start_musiclib "$file"

nport=$(free_port)
mkdir -p "$work/www"
cp "$file" "$work/www/track"
chmod 755 "$work" "$work/www"
chmod 644 "$work/www/track"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 8192;
daemon off;
master_process off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http { access_log off; sendfile on; server { listen 127.0.0.1:$nport; root $work/www; } }
EOF
"$(command -v nginx || echo /usr/sbin/nginx)" -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
pids+=("$nginx_pid")
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$nport/track" && break; sleep 0.1; done

echo "musiclib:"
python3 "$repo/benches/slow-streams.py" "$api/stream/$id?token=$token" "$musiclib_pid" "$connections" "$seconds"
echo "nginx (one worker, sendfile):"
python3 "$repo/benches/slow-streams.py" "http://127.0.0.1:$nport/track" "$nginx_pid" "$connections" "$seconds"
