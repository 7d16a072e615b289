#!/usr/bin/env bash
# Builds the release binary a user downloads: stripped (the release profile), carrying the
# web player built from its OpenAPI document. Prints the binary's path last. Used by
# build-deb.sh, build-image.sh and the Dockerfile. Installs the Rust toolchain and Node.js
# when missing (.ci/toolchain.sh, .ci/web.sh).
#
#   packaging/build-release.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
# The binary, then the web player from its OpenAPI document, then the binary again to carry
# the player (as .ci/serve.sh does).
cargo build --release --locked --quiet -p musiclib-bin
binary="$(realpath "${CARGO_TARGET_DIR:-target}/release/musiclib")"
.ci/web.sh "$binary" >&2
cargo build --release --locked --quiet -p musiclib-bin
echo "$binary"
