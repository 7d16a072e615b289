#!/usr/bin/env bash
# lyrics-load.sh: the latency of a cached `GET /api/v1/tracks/{id}/lyrics` (embedded default,
# SQLite, release build, loopback), beside `GET /api/v1/tracks/{id}` in the same run. The
# first request fills the cache from a stand-in LRCLIB on loopback serving the fixture's
# synced record (20 lines); then 2,000 requests one after another on one keep-alive
# connection. Prints p50/p95/p99 of each (goal: lyrics p95 <= 5 ms).
#
#   benches/lyrics-load.sh [FILE] [REQUESTS]
#
# Needs: a release build (`cargo build --release -p musiclib-bin`), curl, jq, python3 and the
# shared fixtures beside the repository. FILE defaults to a FLAC of the test corpus.
set -euo pipefail

file="${1:-$(dirname "$0")/../target/corpus/library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac}"
requests="${2:-2000}"
. "$(dirname "$0")/common.sh"
[ -f "$file" ] || { echo "no such file: $file" >&2; exit 2; }
need_packages jq:jq curl:curl
fixture="$repo/../shared/fixtures/lrclib/get_synced.json"
[ -f "$fixture" ] || { echo "no LRCLIB fixture at $fixture" >&2; exit 2; }

# A stand-in LRCLIB: every GET answers the synced record.
lport=$(free_port)
python3 "$repo/.ci/lrclib-stub.py" "$lport" "$fixture" &
pids+=($!)
export LRCLIB_BASE_URL="http://127.0.0.1:$lport"
start_musiclib "$file"
first=$(curl -sf "$api/tracks/$id/lyrics" -H "Authorization: Bearer $token" | jq -r '"\(.status) \(.source) \(.lines | length) lines"')
echo "first request: $first"

python3 - "$api" "$token" "$id" "$requests" <<'PY'
import http.client, statistics, sys, time, urllib.parse
api, token, track, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
url = urllib.parse.urlsplit(api)
conn = http.client.HTTPConnection(url.hostname, url.port)
headers = {"Authorization": f"Bearer {token}"}
def measure(path):
    times = []
    for index in range(count + 100):
        start = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            sys.exit(f"{path}: HTTP {response.status}")
        if index >= 100:
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    pick = lambda p: times[min(len(times) - 1, len(times) * p // 100)]
    return pick(50), pick(95), pick(99)
lyrics = measure(f"{url.path}/tracks/{track}/lyrics")
plain = measure(f"{url.path}/tracks/{track}")
print(f"cached lyrics: p50 {lyrics[0]:.2f} ms, p95 {lyrics[1]:.2f} ms, p99 {lyrics[2]:.2f} ms (goal p95 <= 5 ms)")
print(f"track (reference): p50 {plain[0]:.2f} ms, p95 {plain[1]:.2f} ms, p99 {plain[2]:.2f} ms")
print(f"p95 ratio lyrics/track: {lyrics[1] / plain[1]:.2f}")
PY
