#!/usr/bin/env bash
# Runs the musiclib server on the embedded default (SQLite file and local disk under ./data,
# in-process job worker), installing a Rust toolchain and ffmpeg first when they are missing.
# Extra arguments go to `musiclib serve`; settings come from the environment (see the README).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
if ! command -v ffmpeg >/dev/null; then
  echo "installing ffmpeg (transcoding)" >&2
  apt_install ffmpeg
fi
cargo build --release --quiet -p musiclib-bin
exec ./target/release/musiclib serve "$@"
