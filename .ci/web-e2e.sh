#!/usr/bin/env bash
# End-to-end test of the web player in Debian's Chromium (Playwright), against the real binary:
#   - installs Chromium from apt when /usr/bin/chromium is missing (no browser download),
#   - starts `<binary> serve` on a free loopback port with a fresh DATA_DIR and <music-folder>
#     as LOCAL_MEDIA_IMPORT_PATH: on the embedded default, or, when E2E_DATABASE_URL and
#     E2E_S3_ENDPOINT are set, on PostgreSQL + S3 (as .ci/subsonic-e2e.sh),
#   - starts a second musiclib (web/e2e/friend-server.sh) as the server's `subsonic` remote
#     source, for the remote search tests,
#   - imports the folder as the admin and waits for the scan,
#   - runs `npm run e2e` in web/ with MUSICLIB_URL, MUSICLIB_USER and MUSICLIB_PASSWORD.
# The binary must serve the built player (.ci/web.sh first). The server is stopped on exit;
# on failure the tail of its log is printed.
#
#   .ci/web-e2e.sh <path-to-musiclib-binary> <music-folder>
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=web-e2e
. "$repo/.ci/e2e-server.sh" "$@"
. .ci/toolchain.sh

if [ ! -x /usr/bin/chromium ]; then
  log "installing chromium (Debian's package: Playwright drives it, nothing is downloaded)"
  apt_install chromium
fi
[ -f web/dist/index.html ] || die "web/dist is not built: run .ci/web.sh $1 first"

# A stand-in LRCLIB on loopback (LRCLIB's answer shape): every lookup answers synced lyrics
# with a line every 2 seconds, so the player has lines to highlight in time (the corpus has
# no lyrics).
lrclib_port="$(free_port)"
node "$repo/web/e2e/lrclib-mock.mjs" "$lrclib_port" >"$tmp/lrclib.log" 2>&1 &
helpers+=($!)
# A friend's musiclib on loopback (SQLite, three tracks of its own, behind a slow link so a
# download can be watched): the tested server's `subsonic` remote source, for remote search,
# save, play and download in the search box.
friend_port="$(free_port)"
FRIEND_LINK_PORT="$(free_port)"
export FRIEND_LINK_PORT
friend="$("$repo/web/e2e/friend-server.sh" "$binary" "$music" "$friend_port" "$tmp/friend")" \
  || die "the friend's server did not start (logs in $tmp/friend)"
eval "$friend"
helpers+=($FRIEND_PIDS)
start_server "http://127.0.0.1:$lrclib_port"

log "importing $music"
python3 - "$base" "$admin_user" "$admin_password" <<'PY' || die "the import did not finish"
import json, sys, time, urllib.request

base, user, password = sys.argv[1:4]

def call(method, path, body=None, token=None):
    request = urllib.request.Request(base + "/api/v1" + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)

token = call("POST", "/auth/login", {"username": user, "password": password})["access_token"]
job = call("POST", "/sources/local_folder/scan", None, token)
job_id = job.get("job_id") or job.get("id")
deadline = time.time() + 600
while time.time() < deadline:
    state = call("GET", f"/jobs/{job_id}", token=token)["state"]
    if state == "succeeded":
        break
    if state == "failed":
        sys.exit(f"the scan failed: {state}")
    time.sleep(0.5)
else:
    sys.exit("the scan did not finish within 600 s")
PY

log "running the Playwright tests in Chromium ($setup)"
cd web
# WEB_E2E_ARGS: more arguments for `playwright test` (the test command runs the tests that
# depend on the backend, `--project desktop --grep-invert @ui`, on its second set-up).
# shellcheck disable=SC2086
# MUSICLIB_BIN and MUSICLIB_MUSIC: for the offline test, which starts and stops a server of
# its own (the shared one must stay up for the others).
MUSICLIB_URL="$base" MUSICLIB_USER="$admin_user" MUSICLIB_PASSWORD="$admin_password" \
  MUSICLIB_BIN="$binary" MUSICLIB_MUSIC="$music" \
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm run --silent e2e -- ${WEB_E2E_ARGS:-}
log "web player end-to-end test passed ($setup)"
