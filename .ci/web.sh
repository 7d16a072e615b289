#!/usr/bin/env bash
# Builds the web player (web/ → web/dist), which the binary carries and serves at `/`:
#   .ci/web.sh MUSICLIB_BINARY
# installs Node.js from apt when it is missing or older than Vite needs, writes the OpenAPI
# document the binary serves to web/openapi.json (the UI's API types are generated from it,
# so an API change breaks this build, not the UI's users), installs the locked npm packages
# and builds. `apt_install` and `at_least` come from toolchain.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
binary="${1:?usage: .ci/web.sh MUSICLIB_BINARY}"
. .ci/toolchain.sh

node_wanted=20.19.0
node_recent_enough() {
  command -v node >/dev/null && command -v npm >/dev/null || return 1
  at_least "$node_wanted" "$(node --version | tr -d v)"
}
if ! node_recent_enough; then
  echo "installing Node.js and npm from apt (Node.js $node_wanted or newer builds the web player)" >&2
  apt_install nodejs npm
  node_recent_enough || {
    echo "Node.js $node_wanted or newer is required to build the web player; apt gave $(node --version 2>&1)." >&2
    echo "Add a newer Node.js (Debian 13, or NodeSource's repository for Debian 12) and run this again." >&2
    exit 1
  }
fi

"$binary" openapi > web/openapi.json
cd web
# The lock file pins every package; a tree that matches it is reused.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build
