#!/usr/bin/env bash
# Installs the pinned yt-dlp (the `remote` source's program) into a venv and prints the
# program's path. From PyPI: yt-dlp (pinned) with its default extras (certifi, requests,
# websockets, the YouTube challenge solver yt-dlp-ejs, ...) and deno, the JavaScript runtime
# yt-dlp needs for YouTube. (yt-dlp's own `pin` extras name a certifi that PyPI does not
# have, so they cannot be used.) ffmpeg (for -x) comes from the system. Does nothing when the
# venv already holds this version.
#
#   .ci/ytdlp.sh <venv-dir>        # prints <venv-dir>/bin/yt-dlp
set -euo pipefail

version="2026.10.26"
[ $# -eq 1 ] || { echo "usage: $0 <venv-dir>" >&2; exit 2; }
venv="$1"

if ! "$venv/bin/yt-dlp" --version 2>/dev/null | grep -qx "$version"; then
  echo "installing yt-dlp $version (with deno) into $venv" >&2
  python3 -c 'import venv, ensurepip' 2>/dev/null || {
    echo "python3 with venv and ensurepip is required (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  # A venv that was moved (its scripts name the old place) is made again.
  "$venv/bin/pip" --version >/dev/null 2>&1 || python3 -m venv --clear "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "yt-dlp[default,deno]==$version"
fi
echo "$venv/bin/yt-dlp"
