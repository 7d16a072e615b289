#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine or in CI:
#   - installs what is missing (a Rust toolchain, Debian packages, moto for the S3-compatible
#     server, the pinned yt-dlp for the remote source's tests),
#   - starts a private PostgreSQL and an S3-compatible server (moto) on loopback,
#   - generates the test corpus (shared/corpus/make-corpus.sh),
#   - checks the formatting (rustfmt) and the lints (clippy, warnings are errors),
#   - builds once (the fuzz targets too) and runs every test on SQLite + local disk and on
#     PostgreSQL + S3, going on past a failing test binary,
#   - builds the web player (Node.js from apt when missing, npm packages from the lock file),
#   - runs the examples and the Subsonic end-to-end test (a real client library from PyPI
#     against the real binary, on both set-ups), schemathesis (pinned, from PyPI) against
#     /api/v1/openapi.json, the web player's unit tests and its Playwright tests in Debian's
#     Chromium (both set-ups), and checks the crates' dependency rules,
#   - builds the Debian package and the container image from the debug binary and tests
#     them (packaging/test-deb.sh in a fresh Debian root, packaging/test-image.sh with podman).
# It sets MUSICLIB_TEST_SERVICES=1: tests that need these services then run, and a missing
# one fails them (outside this command they show as ignored, never as passed).
# Everything it starts is stopped on exit.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
shared="${MUSICLIB_SHARED:-$repo/../shared}"
state="$repo/target/ci"
mkdir -p "$state"

log() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

# ---------------------------------------------------------------- dependencies
. .ci/toolchain.sh
need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v curl >/dev/null || need+=(curl)
command -v xmllint >/dev/null || need+=(libxml2-utils)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
# Python venvs: moto (S3) and the Subsonic client of the end-to-end test.
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt_install "${need[@]}"
fi
moto="$(command -v moto_server || true)"
if [ -z "$moto" ] || ! "$moto" --help >/dev/null 2>&1; then
  if [ ! -x "$state/venv/bin/moto_server" ]; then
    log "installing moto (S3-compatible test server) into target/ci/venv"
    python3 -m venv "$state/venv"
    "$state/venv/bin/pip" install -q 'moto[server]'
  fi
  moto="$state/venv/bin/moto_server"
fi

# yt-dlp (the `remote` source), pinned, from PyPI: the tests run the real program.
MUSICLIB_TEST_YTDLP="$(.ci/ytdlp.sh "$state/ytdlp")"
export MUSICLIB_TEST_YTDLP

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# ---------------------------------------------------------------- PostgreSQL
pids=()
pg_dir=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "$pg_dir" ] && [ -d "$pg_dir" ]; then
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
    else "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true; fi
    rm -rf "$pg_dir"
  fi
}
trap cleanup EXIT

pg_bin="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"
pg_port="$(free_port)"
pg_dir="$(mktemp -d /tmp/musiclib-pg.XXXXXX)"
log "starting a private PostgreSQL on 127.0.0.1:$pg_port"
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$pg_dir"
run_pg "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust -E UTF8 >/dev/null
run_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -o \
  "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
  start >/dev/null
export MUSICLIB_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"

# ---------------------------------------------------------------- S3 (moto)
s3_port="$(free_port)"
log "starting moto_server (S3) on 127.0.0.1:$s3_port"
"$moto" -H 127.0.0.1 -p "$s3_port" >"$state/moto.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$s3_port/" >/dev/null 2>&1 && break; sleep 0.1; done
export MUSICLIB_TEST_S3_ENDPOINT="http://127.0.0.1:$s3_port"
export MUSICLIB_TEST_S3_BUCKET=musiclib-test
curl -sf -X PUT "$MUSICLIB_TEST_S3_ENDPOINT/$MUSICLIB_TEST_S3_BUCKET" >/dev/null

# ---------------------------------------------------------------- corpus
log "generating the test corpus"
"$shared/corpus/make-corpus.sh" "$repo/target/corpus" >"$state/corpus.log" 2>&1 || { cat "$state/corpus.log" >&2; exit 1; }
export MUSICLIB_TEST_CORPUS="$repo/target/corpus"
export MUSICLIB_TEST_SERVICES=1

# ---------------------------------------------------------------- checks and tests
log "checking the dependency rules of the crates"
# Output is captured before it is searched: `cmd | grep -q` under pipefail fails (SIGPIPE)
# whenever grep stops early, which would make a check pass by accident.
deps() { cargo tree -p "$1" -e normal --prefix none "${@:2}" | awk '{print $1}' | sort -u; }
core_direct="$(deps musiclib-core --depth 1)"
if grep -qxE 'axum|axum-core|hyper|tower|tower-http|http' <<<"$core_direct"; then
  echo "musiclib-core depends directly on a web framework:" >&2; echo "$core_direct" >&2; exit 1
fi
if grep -qxE 'axum|axum-core' <<<"$(deps musiclib-core)"; then
  echo "musiclib-core pulls in axum" >&2; exit 1
fi
# tower-http may come only with reqwest's HTTP client (its redirect middleware).
tower_http_users="$(cargo tree -p musiclib-core -e normal -i tower-http --depth 1 --prefix none 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)"
if [ -n "$tower_http_users" ] && [ "$tower_http_users" != "reqwest" ]; then
  echo "musiclib-core pulls in tower-http through: $tower_http_users" >&2; exit 1
fi
for adapter in musiclib-http musiclib-subsonic musiclib-media-http; do
  direct="$(deps "$adapter" --depth 1)"
  if grep -qx sqlx <<<"$direct"; then
    echo "$adapter depends on sqlx directly" >&2; exit 1
  fi
  for other in musiclib-http musiclib-subsonic; do
    if [ "$other" != "$adapter" ] && grep -qx "$other" <<<"$direct"; then
      echo "$adapter depends on $other: adapters depend on core (and musiclib-media-http) only" >&2; exit 1
    fi
  done
done

log "checking the formatting and the lints"
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$component" >/dev/null
  fi
done
cargo fmt --all --check

log "building, with the lints (clippy, warnings denied)"
# Clippy's driver compiles the workspace's own crates (what `cargo clippy` would check) and
# lints them in the same pass: the dependencies compile once, not once for the lints and
# again for the build. Every cargo command below runs with the same driver, so none of them
# rebuilds; a plain `cargo build` afterwards recompiles the workspace's crates only.
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
cargo build --workspace --all-targets --quiet

log "building the web player (web/: npm packages from the lock file, Vite)"
.ci/web.sh target/debug/musiclib

log "running the tests (SQLite + local disk, PostgreSQL + S3)"
# Every test binary runs whatever an earlier one did: one failure never hides the others.
test_status=0
# (The fuzz targets are built above, never run here: each is libFuzzer's endless loop;
# fuzz/run.sh runs them for a set time. The benchmarks are built above too, and run by
# `cargo bench`, never here: their set-ups are load runs, 100,000 tracks and a million events
# on both backends, some six minutes of the command.)
cargo test --workspace --exclude musiclib-fuzz --lib --bins --tests --examples --no-fail-fast --quiet 2>&1 \
  | tee "$state/test.log" || test_status=$?
if [ "$test_status" -ne 0 ]; then
  echo "failed tests:" >&2
  grep -E '^test .* FAILED$|^    [a-z_:]+$' "$state/test.log" >&2 || true
  exit "$test_status"
fi

log "running the examples"
# The builds above made them; `cargo run -p` would build again, with that package's features.
target/debug/examples/embed_core "$MUSICLIB_TEST_CORPUS/library"
target/debug/examples/mount_api --self-test

log "driving the binary with a real Subsonic client (py-opensonic), embedded"
.ci/subsonic-e2e.sh target/debug/musiclib "$MUSICLIB_TEST_CORPUS/library" | tee "$state/subsonic-e2e.log" | grep -E '^(ok|FAIL)' >&2
log "driving the binary with a real Subsonic client (py-opensonic), PostgreSQL + S3"
run_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres musiclib_e2e
E2E_DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/musiclib_e2e" \
  E2E_S3_ENDPOINT="$MUSICLIB_TEST_S3_ENDPOINT" E2E_S3_BUCKET="$MUSICLIB_TEST_S3_BUCKET" E2E_S3_PREFIX=e2e \
  .ci/subsonic-e2e.sh target/debug/musiclib "$MUSICLIB_TEST_CORPUS/library" | tee "$state/subsonic-e2e-scale-out.log" | grep -E '^(ok|FAIL)' >&2

log "schema fuzzing of /api/v1 against its own OpenAPI document (schemathesis)"
.ci/schemathesis.sh target/debug/musiclib

log "the web player's unit tests (Vitest)"
(cd web && npm run --silent test)
log "the web player in Chromium (Playwright), embedded"
.ci/web-e2e.sh target/debug/musiclib "$MUSICLIB_TEST_CORPUS/library"
# On the second set-up, what depends on the backend: the desktop tests but the page-by-page
# layout and accessibility sweep (tagged @ui), which draws the same pages on either.
log "the web player in Chromium (Playwright), PostgreSQL + S3: the tests that touch the backend"
run_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres musiclib_web_e2e
E2E_DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/musiclib_web_e2e" \
  E2E_S3_ENDPOINT="$MUSICLIB_TEST_S3_ENDPOINT" E2E_S3_BUCKET="$MUSICLIB_TEST_S3_BUCKET" E2E_S3_PREFIX=web-e2e \
  WEB_E2E_ARGS="--project desktop --grep-invert @ui" .ci/web-e2e.sh target/debug/musiclib "$MUSICLIB_TEST_CORPUS/library"

# The ways people install it, from this build's binary (the release build a user downloads
# differs only in its profile; packaging/build-release.sh makes it): the Debian package in a
# fresh Debian root, and the container image run by podman on both set-ups.
log "the Debian package (packaging/build-deb.sh, packaging/test-deb.sh)"
# (They need root: chroot, mmdebstrap, buildah, podman; sudo keeps no environment, hence env.)
deb="$(as_root env MUSICLIB_BINARY=target/debug/musiclib packaging/build-deb.sh "$state/packages" | tail -n 1)"
as_root packaging/test-deb.sh "$deb"
log "the container image (packaging/build-image.sh, packaging/test-image.sh, packaging/test-dockerfile.sh)"
archive="$(as_root env MUSICLIB_BINARY=target/debug/musiclib packaging/build-image.sh "$state/packages" | tail -n 1)"
run_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres musiclib_image
as_root env TEST_IMAGE_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/musiclib_image" \
  TEST_IMAGE_S3_ENDPOINT="$MUSICLIB_TEST_S3_ENDPOINT" TEST_IMAGE_S3_BUCKET="$MUSICLIB_TEST_S3_BUCKET" \
  packaging/test-image.sh "$archive"
as_root packaging/test-dockerfile.sh "$archive" target/debug/musiclib
as_root rm -f "$archive"

read -r passed failed ignored < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1); if ($i == "ignored;") g += $(i-1) } } END { print p + 0, f + 0, g + 0 }' "$state/test.log")
if [ "$ignored" -ne 0 ]; then
  echo "$ignored tests were ignored: under this command every test runs" >&2; exit 1
fi
log "all tests passed"
echo "tests: $passed passed, $failed failed, $ignored ignored"
