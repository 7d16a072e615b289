#!/usr/bin/env bash
# remote-load.sh: remote sources, measured side by side in one run (release build, embedded
# default, loopback):
#
# 1. Search latency, `GET /api/v1/search`, with two sources, one slow: the `subsonic` source
#    (another musiclib holding FILE, reached directly or through a proxy that waits SLOW_S
#    seconds before each request) and the `remote` source (yt-dlp, which fails fast here:
#    YouTube cannot be reached). p50 of 10 searches per case: sources are asked at once, so a
#    search takes as long as the slowest source within REMOTE_SEARCH_TIMEOUT_SECONDS, never
#    the sum.
# 2. Download throughput: a large FLAC (generated, about SIZE_MB) fetched into the library by
#    `POST /downloads`, until the download is `completed` (queue, fetch, probe, hash, store),
#    next to the plain tool doing the fetch alone on the same file: yt-dlp run by hand
#    (`remote` source) and curl of the friend's `/rest/download` (`subsonic` source). Ratio
#    musiclib / plain tool, best of 3 each.
#
#   benches/remote-load.sh [FILE] [SIZE_MB]
#
# Needs: a release build (`cargo build --release -p musiclib-bin`), the pinned yt-dlp
# (.ci/ytdlp.sh installs it), ffmpeg, curl, jq, python3.
set -euo pipefail

file="${1:-$(dirname "$0")/../target/corpus/library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac}"
size_mb="${2:-200}"
slow_s="${SLOW_S:-2}"
. "$(dirname "$0")/common.sh"
[ -f "$file" ] || { echo "no such file: $file" >&2; exit 2; }
need_packages jq:jq curl:curl ffmpeg:ffmpeg
ytdlp="$("$repo/.ci/ytdlp.sh" "$repo/target/ci/ytdlp")"

serve_musiclib() { # DATA PORT [ENV...]: starts musiclib serve, waits for it
  local data="$1" port="$2"; shift 2
  env DATA_DIR="$data" BIND_ADDRESS="127.0.0.1:$port" RUST_LOG=warn COVERART_ENABLED=false \
    LRCLIB_BASE_URL=http://127.0.0.1:9 "$@" "$bin" serve >"$data.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && return; sleep 0.1; done
  echo "musiclib on $port did not start: $(tail -5 "$data.log")" >&2; exit 1
}
register() { curl -sf -X POST "$1/auth/register" -H 'content-type: application/json' \
  -d '{"username":"bench","password":"bench-password"}' | jq -r .access_token; }
now() { python3 -c 'import time; print(time.monotonic())'; }

# ------------------------------------------------------------------ the files
big="$work/big.flac"
seconds=$(( size_mb * 1000000 / 170000 ))   # white-noise FLAC: about 170 kB per second
ffmpeg -v error -f lavfi -i "anoisesrc=d=$seconds:c=pink:r=44100:a=0.5" -ac 2 -c:a flac "$big"
big_bytes=$(stat -c %s "$big")
mkdir -p "$work/site/media" && ln -s "$big" "$work/site/media/big.flac"
site_port=$(free_port)
(cd "$work/site" && exec python3 -m http.server "$site_port" --bind 127.0.0.1 >/dev/null 2>&1) &
pids+=($!)

# The friend: a musiclib holding FILE and the big file.
friend_port=$(free_port)
mkdir -p "$work/friend"
serve_musiclib "$work/friend" "$friend_port"
friend="http://127.0.0.1:$friend_port/api/v1"
ftoken=$(register "$friend")
small_id=$(curl -sf -X POST "$friend/tracks/upload" -H "Authorization: Bearer $ftoken" -F "file=@$file" | jq -r .id)
big_id=$(curl -sf -X POST "$friend/tracks/upload" -H "Authorization: Bearer $ftoken" -F "file=@$big;filename=big.flac" | jq -r .id)
settled() { # API TOKEN TRACK: waits until the track's enrichment has run (it uses a core)
  for _ in $(seq 600); do
    [ "$(curl -sf "$1/tracks/$3" -H "Authorization: Bearer $2" | jq -r .metadata_status)" != pending ] && return
    sleep 0.1
  done
}
settled "$friend" "$ftoken" "$small_id"; settled "$friend" "$ftoken" "$big_id"
app_password=$(curl -sf "$friend/users/me/legacy-password" -H "Authorization: Bearer $ftoken" | jq -r .password)
title=$(curl -sf "$friend/tracks/$small_id" -H "Authorization: Bearer $ftoken" | jq -r .title)

# A proxy in front of the friend that waits before every request: the slow source.
proxy_port=$(free_port)
python3 - "$proxy_port" "$friend_port" "$slow_s" <<'PY' &
import http.server, socketserver, sys, time, urllib.request
port, target, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
class Proxy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(delay)
        with urllib.request.urlopen(f"http://127.0.0.1:{target}{self.path}") as answer:
            body = answer.read()
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.headers.get("Content-Type", ""))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    def log_message(self, *args):
        pass
    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("127.0.0.1", port), Proxy).serve_forever()
PY
pids+=($!)

# ------------------------------------------------------------------ 1. search latency
search_case() { # LABEL SUBSONIC_URL TIMEOUT [yt-dlp on: 1/0]
  local label="$1" url="$2" timeout="$3" ytdlp_on="$4" port data
  port=$(free_port); data="$work/search-$port"; mkdir -p "$data"
  local env=(SUBSONIC_SOURCE_URL="$url" SUBSONIC_SOURCE_USERNAME=bench SUBSONIC_SOURCE_PASSWORD="$app_password"
    REMOTE_SEARCH_TIMEOUT_SECONDS="$timeout")
  [ "$ytdlp_on" = 1 ] && env+=(REMOTE_ENABLED=true YTDLP_PATH="$ytdlp" REMOTE_MIN_INTERVAL_MS=0)
  serve_musiclib "$data" "$port" "${env[@]}"
  local api="http://127.0.0.1:$port/api/v1" token
  token=$(register "$api")
  python3 - "$api" "$token" "$title" "$label" <<'PY'
import json, statistics, sys, time, urllib.parse, urllib.request
api, token, title, label = sys.argv[1:]
times, last = [], None
for _ in range(10):
    request = urllib.request.Request(f"{api}/search?q={urllib.parse.quote(title)}", headers={"Authorization": f"Bearer {token}"})
    start = time.perf_counter()
    with urllib.request.urlopen(request) as answer:
        last = json.load(answer)
    times.append((time.perf_counter() - start) * 1000)
sources = ", ".join(f"{s['source']} {'ok' if s['ok'] else 'failed'} {s['took_ms']} ms" for s in last["sources"])
print(f"  {label:<48} p50 {statistics.median(times):7.1f} ms  hits {len(last['hits'])}  ({sources})")
PY
}
echo "search latency (GET /search, p50 of 10):"
search_case "subsonic alone (fast)" "http://127.0.0.1:$friend_port" 10 0
search_case "subsonic (fast) + remote (yt-dlp, failing)" "http://127.0.0.1:$friend_port" 10 1
search_case "subsonic (slow: ${slow_s} s) + remote (yt-dlp, failing)" "http://127.0.0.1:$proxy_port" 10 1
search_case "subsonic (slow: ${slow_s} s), timeout 1 s, + remote" "http://127.0.0.1:$proxy_port" 1 1

# ------------------------------------------------------------------ 2. download throughput
port=$(free_port); data="$work/ours"; mkdir -p "$data"
serve_musiclib "$data" "$port" REMOTE_ENABLED=true YTDLP_PATH="$ytdlp" REMOTE_MIN_INTERVAL_MS=0 \
  REMOTE_WATCH_URL="http://127.0.0.1:$site_port/media/{id}" \
  SUBSONIC_SOURCE_URL="http://127.0.0.1:$friend_port" SUBSONIC_SOURCE_USERNAME=bench SUBSONIC_SOURCE_PASSWORD="$app_password" \
  MAX_UPLOAD_BYTES=$(( big_bytes * 2 ))
ours="http://127.0.0.1:$port/api/v1"
token=$(register "$ours")

download_once() { # SOURCE SOURCE_ID: "POST-seconds FETCH-seconds": the request (which asks the
  # source for the item's metadata and saves the placeholder), then from its answer until the
  # download is completed (queue, fetch, probe, hash, store). The track is deleted after, so
  # the next run fetches again.
  local start posted end created id track state
  start=$(now)
  created=$(curl -sf -X POST "$ours/downloads" -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -d "{\"source\":\"$1\",\"source_id\":\"$2\"}")
  posted=$(now)
  id=$(jq -r .download.id <<<"$created"); track=$(jq -r .download.track_id <<<"$created")
  while :; do
    state=$(curl -sf "$ours/downloads/$id" -H "Authorization: Bearer $token" | jq -r .state)
    [ "$state" = completed ] && break
    [ "$state" = failed ] && { echo "download failed: $(curl -sf "$ours/downloads/$id" -H "Authorization: Bearer $token")" >&2; exit 1; }
    sleep 0.05
  done
  end=$(now)
  settled "$ours" "$token" "$track"
  curl -sf -X DELETE "$ours/tracks/$track" -H "Authorization: Bearer $token" >/dev/null
  python3 -c "print(f'{$end - $posted:.3f} {$posted - $start:.3f}')"
}
plain_ytdlp() {
  local start end out="$work/plain"; rm -rf "$out"; mkdir -p "$out"; start=$(now)
  "$ytdlp" --no-config -q -f bestaudio/best -x -o "$out/audio.%(ext)s" -- "http://127.0.0.1:$site_port/media/big.flac"
  end=$(now); python3 -c "print(f'{$end - $start:.3f}')"
}
plain_curl() {
  local start end salt tokenhash
  salt=abcdef; tokenhash=$(printf '%s' "$app_password$salt" | md5sum | cut -d' ' -f1)
  start=$(now)
  curl -sf -o "$work/plain.flac" "http://127.0.0.1:$friend_port/rest/download?u=bench&t=$tokenhash&s=$salt&v=1.16.1&c=bench&id=$big_id"
  end=$(now); python3 -c "print(f'{$end - $start:.3f}')"
}
best() { sort -n | head -n 1; }

mb=$(python3 -c "print(f'{$big_bytes / 1e6:.0f}')")
echo "download throughput ($mb MB FLAC, best of 3):"
read -r m_yt q_yt < <(for _ in 1 2 3; do download_once remote big.flac; done | best)
p_yt=$(for _ in 1 2 3; do plain_ytdlp; done | best)
read -r m_ss q_ss < <(for _ in 1 2 3; do download_once subsonic "$big_id"; done | best)
p_ss=$(for _ in 1 2 3; do plain_curl; done | best)
python3 - "$big_bytes" "$m_yt" "$p_yt" "$m_ss" "$p_ss" "$q_yt" "$q_ss" <<'PY'
import sys
size = int(sys.argv[1]) / 1e6
m_yt, p_yt, m_ss, p_ss, q_yt, q_ss = map(float, sys.argv[2:])
print(f"  remote (yt-dlp):  musiclib {m_yt:.2f} s ({size / m_yt:.0f} MB/s), yt-dlp by hand {p_yt:.2f} s ({size / p_yt:.0f} MB/s), ratio {m_yt / p_yt:.2f}; the POST itself {q_yt:.2f} s (yt-dlp -j)")
print(f"  subsonic:         musiclib {m_ss:.2f} s ({size / m_ss:.0f} MB/s), curl of /rest/download {p_ss:.2f} s ({size / p_ss:.0f} MB/s), ratio {m_ss / p_ss:.2f}; the POST itself {q_ss:.2f} s (getSong)")
PY
