# Sourced by the end-to-end scripts (subsonic-e2e.sh, web-e2e.sh) with their arguments
# (<path-to-musiclib-binary> <music-folder>), after they set `name` (for messages and the
# state folder) and `repo`; goes to `repo`. Gives a musiclib server on a free loopback
# port with a fresh DATA_DIR and `music` as LOCAL_MEDIA_IMPORT_PATH, on the embedded default or,
# when E2E_DATABASE_URL and E2E_S3_ENDPOINT are set, on PostgreSQL + S3 (E2E_S3_BUCKET,
# E2E_S3_PREFIX; moto's test credentials), with an admin account. Everything it starts (and
# every pid added to `helpers`) is stopped on exit; on failure the tail of the server's log is
# printed and its state kept.

if [ $# -ne 2 ]; then
  echo "usage: $0 <path-to-musiclib-binary> <music-folder>" >&2
  exit 2
fi
[ -f "$1" ] && [ -x "$1" ] || { echo "not an executable: $1" >&2; exit 2; }
[ -d "$2" ] || { echo "not a folder: $2" >&2; exit 2; }
binary="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
music="$(cd "$2" && pwd)"
cd "$repo"

admin_user="admin"
admin_password="admin-password-1"

log() { printf '\n==> %s\n' "$*" >&2; }
die() { echo "$name: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

port="$(free_port)"
base="http://127.0.0.1:$port"
tmp="$(mktemp -d "/tmp/musiclib-$name.XXXXXX")"
server_pid=""
helpers=()

e2e_cleanup() {
  local status=$?
  for pid in "${helpers[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ]; then
    echo >&2
    echo "$name: FAILED (exit $status); last lines of $tmp/server.log:" >&2
    tail -n 80 "$tmp/server.log" >&2 2>/dev/null || true
    echo "(state kept in $tmp)" >&2
  else
    rm -rf "$tmp"
  fi
  exit "$status"
}
trap e2e_cleanup EXIT

# Settings that could point the server elsewhere (a config file, an AcoustID key) are unset;
# the backend is the one this run asks for, under the fresh DATA_DIR (also the cwd).
backend=(-u DATABASE_URL -u STORAGE_BACKEND -u S3_BUCKET -u S3_ENDPOINT -u S3_PREFIX)
setup="embedded default (SQLite, local disk)"
if [ -n "${E2E_DATABASE_URL:-}" ] && [ -n "${E2E_S3_ENDPOINT:-}" ]; then
  backend=(DATABASE_URL="$E2E_DATABASE_URL" STORAGE_BACKEND=s3 S3_ENDPOINT="$E2E_S3_ENDPOINT"
    S3_BUCKET="${E2E_S3_BUCKET:-musiclib-test}" S3_PREFIX="${E2E_S3_PREFIX:-$name}" S3_ALLOW_HTTP=true
    S3_ACCESS_KEY_ID=test S3_SECRET_ACCESS_KEY=test)
  setup="PostgreSQL + S3"
fi

# start_server LRCLIB_BASE_URL: starts `$binary serve` and waits for /health.
start_server() {
  log "starting $binary serve on $base ($setup, DATA_DIR=$tmp, music from $music)"
  (
    cd "$tmp"
    exec env -u LOCAL_STORAGE_PATH -u MUSICLIB_CONFIG -u JWT_SECRET -u LEGACY_SECRET_KEY -u ACOUSTID_API_KEY \
      "${backend[@]}" \
      DATA_DIR="$tmp" BIND_ADDRESS="127.0.0.1:$port" LOCAL_MEDIA_IMPORT_PATH="$music" \
      LRCLIB_BASE_URL="$1" \
      ADMIN_USERNAME="$admin_user" ADMIN_PASSWORD="$admin_password" ALLOW_REGISTRATION=true \
      ALLOW_PRIVATE_URLS=true \
      "$binary" serve
  ) >"$tmp/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    curl -sf "$base/health" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || die "the server exited during start-up"
    sleep 0.2
  done
  die "GET /health did not answer 200 within 60 s"
}
