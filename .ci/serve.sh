#!/usr/bin/env bash
# Runs the musiclib server on the embedded default (SQLite file and local disk under ./data,
# in-process job worker), installing ffmpeg first when it is missing. Extra arguments go to
# `musiclib serve`; settings come from the environment (see the README).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v cargo >/dev/null || { echo "cargo is required (install Rust with rustup)" >&2; exit 1; }
if ! command -v ffmpeg >/dev/null; then
  echo "installing ffmpeg (transcoding)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null; fi
fi
cargo build --release --quiet -p musiclib-bin
exec ./target/release/musiclib serve "$@"
