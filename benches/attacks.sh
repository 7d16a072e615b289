#!/usr/bin/env bash
# attacks.sh: the attacks of issue 33 against the release binary (or MUSICLIB_BIN), one fresh
# embedded server each, printing one JSON line of figures per attack (peak RSS, descriptors,
# ffmpeg processes, files written, statuses). Run it on the build before a fix and after to
# compare: `MUSICLIB_BIN=/path/to/old/musiclib benches/attacks.sh`.
#
#   benches/attacks.sh [ATTACK...]     # signins signins_spread guesses cover_bomb big_bodies idle_sockets
#                                      # live_encodes sidecar secret_file (default: all)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MUSICLIB_BIN:-$repo/target/release/musiclib}"
[ -x "$bin" ] || { echo "build first: cargo build --release -p musiclib-bin" >&2; exit 2; }
command -v ffmpeg >/dev/null || { echo "ffmpeg is needed (apt-get install ffmpeg)" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 "$repo/benches/attacks.py" "$bin" "$@"
