"""200 concurrent API clients with a mixed workload against one or more musiclib servers.

Each client signs in as one of the bench users (shared round-robin) and loops, without
pause beyond a short random think time, over requests drawn by weight:

    tracks   GET /api/v1/tracks?limit=50&offset=…      (browse)
    albums   GET /api/v1/albums?limit=50&offset=…      (browse)
    artists  GET /api/v1/artists?limit=50&offset=…     (browse)
    search   GET /api/v1/search/library?q=…            (a word of a title)
    sync     GET /api/v1/sync/changes?since=…          (from the client's cursor; now and
                                                        then from 0, as a new device)
    stream   GET /api/v1/stream/{id}, Range: 256 KiB   (a random track and offset)

Clients are spread over the base URLs (replicas). The servers' peak resident memory is read
from /proc/PID/status (VmHWM) at the end. Prints, per kind: requests, errors, p50/p95/p99
in ms; then the errors by reason, the throughput, and each server's peak RSS. Exits 1 when
any request failed.

    python3 api-load.py --base URL [--base URL…] --token T [--token T…] --pid PID [--pid PID…]
                        [--clients 200] [--seconds 60] [--think-ms 50]
"""

import argparse
import asyncio
import collections
import math
import random
import sys
import time

import aiohttp

WEIGHTS = {
    "tracks": 15,
    "albums": 15,
    "artists": 15,
    "search": 15,
    "sync": 15,
    "stream": 25,
}
RANGE_BYTES = 256 * 1024
TIMEOUT_S = 30


def peak_rss_mb(pid):
    """VmHWM of `pid`, in MB (the most it held resident since it started)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_kb(pid):
    """RssAnon and RssFile of `pid` now, in kB (heap and the files it maps)."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("RssAnon", "RssFile"):
                values[name] = int(rest.split()[0])
    return values


async def sample_memory(pids, peaks, stop):
    """Keeps, per pid, the largest RssAnon and RssFile seen (twice a second)."""
    while not stop.is_set():
        for pid in pids:
            try:
                now = memory_kb(pid)
            except OSError:
                continue
            peak = peaks.setdefault(pid, {})
            for name, value in now.items():
                peak[name] = max(peak.get(name, 0), value)
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except asyncio.TimeoutError:
            pass


def percentile(sorted_values, fraction):
    if not sorted_values:
        return float("nan")
    # Nearest rank.
    index = min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


class Catalogue:
    """What the clients pick from: page counts, search words, streamable tracks."""

    def __init__(self, totals, words, tracks):
        self.totals = totals
        self.words = words
        self.tracks = tracks


async def read_catalogue(session, base, token):
    headers = {"Authorization": f"Bearer {token}"}
    totals = {}
    for kind in ("tracks", "albums", "artists"):
        async with session.get(f"{base}/api/v1/{kind}?limit=1", headers=headers) as response:
            response.raise_for_status()
            totals[kind] = (await response.json())["total"]
    tracks, offset = [], 0
    while True:
        url = f"{base}/api/v1/tracks?limit=200&offset={offset}"
        async with session.get(url, headers=headers) as response:
            response.raise_for_status()
            page = await response.json()
        tracks.extend(page["items"])
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"] or offset >= 5000:
            break
    words = sorted(
        {word for track in tracks for word in track["title"].split() if len(word) >= 3}
    ) or ["a"]
    streamable = [
        (track["id"], track["size_bytes"])
        for track in tracks
        if track.get("availability") != "placeholder" and (track.get("size_bytes") or 0) > 0
    ]
    if not streamable:
        sys.exit("the library has no track to stream: import some music first")
    return Catalogue(totals, words, streamable)


def request_of(kind, catalogue, state):
    """The URL and headers of one request of `kind`."""
    if kind in ("tracks", "albums", "artists"):
        pages = max(1, (catalogue.totals[kind] + 49) // 50)
        return f"/api/v1/{kind}?limit=50&offset={random.randrange(pages) * 50}", {}
    if kind == "search":
        return f"/api/v1/search/library?q={random.choice(catalogue.words)}&limit=20", {}
    if kind == "sync":
        if random.random() < 0.05:
            state["cursor"] = "0"
        return f"/api/v1/sync/changes?since={state['cursor']}&limit=1000", {}
    track_id, size = random.choice(catalogue.tracks)
    start = random.randrange(max(1, size - RANGE_BYTES))
    end = min(size, start + RANGE_BYTES) - 1
    return f"/api/v1/stream/{track_id}", {"Range": f"bytes={start}-{end}"}


async def client(session, base, token, catalogue, deadline, think_s, results, errors):
    kinds, weights = zip(*WEIGHTS.items())
    state = {"cursor": "0"}
    auth = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < deadline:
        kind = random.choices(kinds, weights)[0]
        path, headers = request_of(kind, catalogue, state)
        started = time.monotonic()
        try:
            async with session.get(base + path, headers={**auth, **headers}) as response:
                body = await response.read()
                if response.status not in (200, 206):
                    errors[(kind, f"HTTP {response.status}")] += 1
                    continue
                if kind == "sync":
                    answer = await response.json(content_type=None)
                    state["cursor"] = answer["cursor"]
                elif kind == "stream" and response.status == 206:
                    wanted = headers["Range"].split("=")[1].split("-")
                    if len(body) != int(wanted[1]) - int(wanted[0]) + 1:
                        errors[(kind, "short range")] += 1
                        continue
            results[kind].append(time.monotonic() - started)
        except Exception as error:  # noqa: BLE001 - every failure counts
            errors[(kind, type(error).__name__)] += 1
        if think_s:
            await asyncio.sleep(random.uniform(0, 2 * think_s))


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", action="append", required=True)
    parser.add_argument("--token", action="append", required=True)
    parser.add_argument("--pid", action="append", type=int, default=[])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think-ms", type=float, default=50)
    args = parser.parse_args()

    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        catalogue = await read_catalogue(session, args.base[0], args.token[0])
        results = collections.defaultdict(list)
        errors = collections.Counter()
        started = time.monotonic()
        deadline = started + args.seconds
        peaks, stop = {}, asyncio.Event()
        sampler = asyncio.create_task(sample_memory(args.pid, peaks, stop))
        await asyncio.gather(
            *(
                client(
                    session,
                    args.base[index % len(args.base)],
                    args.token[index % len(args.token)],
                    catalogue,
                    deadline,
                    args.think_ms / 1000,
                    results,
                    errors,
                )
                for index in range(args.clients)
            )
        )
        elapsed = time.monotonic() - started
        stop.set()
        await sampler

    total = sum(len(latencies) for latencies in results.values())
    failed = sum(errors.values())
    print(
        f"{args.clients} clients, {args.seconds:.0f} s, {len(args.base)} server(s); "
        f"catalogue: {catalogue.totals['tracks']} tracks, {catalogue.totals['albums']} albums, "
        f"{catalogue.totals['artists']} artists"
    )
    print(f"{'kind':<8} {'requests':>9} {'errors':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for kind in WEIGHTS:
        latencies = sorted(results[kind])
        kind_errors = sum(count for (name, _), count in errors.items() if name == kind)
        p50, p95, p99 = (percentile(latencies, f) * 1000 for f in (0.50, 0.95, 0.99))
        print(
            f"{kind:<8} {len(latencies):>9} {kind_errors:>7} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f}"
        )
    everything = sorted(latency for latencies in results.values() for latency in latencies)
    p50, p95, p99 = (percentile(everything, f) * 1000 for f in (0.50, 0.95, 0.99))
    print(f"{'all':<8} {total:>9} {failed:>7} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f}")
    print(f"throughput: {total / elapsed:.0f} requests/s; errors: {failed}")
    for (kind, reason), count in errors.most_common(10):
        print(f"  error {kind}: {reason} x{count}")
    for pid in args.pid:
        peak = peaks.get(pid, {})
        print(
            f"server pid {pid}: peak RSS (VmHWM) {peak_rss_mb(pid):.1f} MB; during the load, "
            f"at most {peak.get('RssAnon', 0) / 1024:.1f} MB of heap (RssAnon) and "
            f"{peak.get('RssFile', 0) / 1024:.1f} MB of mapped files (RssFile)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
