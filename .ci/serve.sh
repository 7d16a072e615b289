#!/usr/bin/env bash
# Runs the musiclib server on the embedded default (SQLite file and local disk under ./data,
# in-process job worker) with the web player at `/`, installing a Rust toolchain, Node.js and
# ffmpeg first when they are missing (and the pinned yt-dlp when REMOTE_ENABLED=true).
# Extra arguments go to `musiclib serve`; settings come from the environment (docs/configuration.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
if ! command -v ffmpeg >/dev/null; then
  echo "installing ffmpeg (transcoding)" >&2
  apt_install ffmpeg
fi
# The yt-dlp source (REMOTE_ENABLED=true) needs yt-dlp: install the pinned one under DATA_DIR
# unless YTDLP_PATH names one.
remote_enabled="$(printf '%s' "${REMOTE_ENABLED:-false}" | tr '[:upper:]' '[:lower:]')"
if [[ "$remote_enabled" =~ ^(1|true|yes|on)$ ]] && [ -z "${YTDLP_PATH:-}" ]; then
  YTDLP_PATH="$(.ci/ytdlp.sh "$(realpath -m "${DATA_DIR:-./data}")/yt-dlp")"
  export YTDLP_PATH
fi
cargo build --release --quiet -p musiclib-bin
# The web player's API types come from this binary's OpenAPI document; then the binary is
# built again to carry the player (only musiclib-bin recompiles).
.ci/web.sh target/release/musiclib
cargo build --release --quiet -p musiclib-bin
exec ./target/release/musiclib serve "$@"
