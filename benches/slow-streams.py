"""1,000 concurrent slow listeners of one stream URL.

Each connection asks for the whole file (`Range: bytes=0-`, as audio elements do) and reads
it at a listener's pace (about 40 KiB/s: a 320 kbit/s stream) for the test's duration. The
server's resident memory is sampled from /proc while they play. Prints the peak RSS and the
errors (failed connections, statuses other than 206, short reads).

    python3 slow-streams.py URL PID [CONNECTIONS] [SECONDS]
"""

import asyncio
import sys
import time
import urllib.parse


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def listen(url, seconds, errors, started):
    parts = urllib.parse.urlsplit(url)
    path = parts.path + ("?" + parts.query if parts.query else "")
    try:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nRange: bytes=0-\r\n\r\n".encode()
        )
        await writer.drain()
        status_line = await reader.readline()
        if b" 206 " not in status_line:
            errors.append(status_line.decode(errors="replace").strip())
            writer.close()
            return
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        started.append(1)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            chunk = await reader.read(8192)
            if not chunk:
                errors.append("the stream ended early")
                break
            await asyncio.sleep(0.2)
        writer.close()
    except Exception as error:  # noqa: BLE001 - every failure counts
        errors.append(repr(error))


async def main():
    url, pid = sys.argv[1], int(sys.argv[2])
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 20
    errors, started = [], []
    before = rss_mb(pid)
    tasks = [asyncio.create_task(listen(url, seconds, errors, started)) for _ in range(connections)]
    peak = before
    while not all(task.done() for task in tasks):
        peak = max(peak, rss_mb(pid))
        await asyncio.sleep(0.25)
    print(
        f"{connections} slow streams for {seconds:.0f} s: {len(started)} played, "
        f"{len(errors)} errors; server RSS {before:.1f} MB idle, {peak:.1f} MB peak"
    )
    for error in sorted(set(errors))[:5]:
        print("  error:", error)


asyncio.run(main())
