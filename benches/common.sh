# Shared by the load scripts: installs what they need, starts a release musiclib on the
# embedded default in a temporary directory, registers a user and uploads one file.
# Sets: work, api, token, id, musiclib_pid; cleans up on exit. Source it, then call
# `start_musiclib FILE`.

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# MUSICLIB_BIN: another build of the binary (a debug one for a quick try; figures need release).
bin="${MUSICLIB_BIN:-$repo/target/release/musiclib}"
[ -x "$bin" ] || { echo "build first: cargo build --release -p musiclib-bin" >&2; exit 2; }

need_packages() {
  local missing=()
  for spec in "$@"; do
    local command="${spec%%:*}" package="${spec##*:}"
    command -v "$command" >/dev/null || [ -x "/usr/sbin/$command" ] || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/dev/null
  fi
}

work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_musiclib() {
  local file="$1" port
  port=$(free_port)
  DATA_DIR="$work/data" BIND_ADDRESS="127.0.0.1:$port" RUST_LOG=warn "$bin" serve --no-worker >"$work/musiclib.log" 2>&1 &
  musiclib_pid=$!
  pids+=("$musiclib_pid")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  api="http://127.0.0.1:$port/api/v1"
  token=$(curl -sf -X POST "$api/auth/register" -H 'content-type: application/json' \
    -d '{"username":"bench","password":"bench-password"}' | jq -r .access_token)
  id=$(curl -sf -X POST "$api/tracks/upload" -H "Authorization: Bearer $token" -F "file=@$file" | jq -r .id)
}
