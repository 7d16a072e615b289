#!/usr/bin/env python3
"""End-to-end test of musiclib's Subsonic / OpenSubsonic interface with a real client library.

Drives a running server through py-opensonic (import name `libopensonic`, pinned to 10.4.1 by
.ci/subsonic-e2e.sh), so every response is parsed by the same code third-party clients use:
a missing required field or a wrongly typed one fails here just as it would in a client.

    subsonic-e2e.py --base-url http://127.0.0.1:PORT --username U --app-password P [--admin]

Prints one line per check ("ok  <name>") and stops at the first failure with a non-zero exit.

How the library talks to the server (read from its source):
  - AsyncConnection(base_url, username, password, port=...) with base_url WITHOUT the port;
    requests go to {base_url}:{port}/rest/{method}.view as form-encoded POST bodies (formPost);
    use_get=True sends query strings instead, use_views=False drops the ".view" suffix.
  - Token auth by default: t = md5(password + s) with a random salt s; legacy_auth=True sends
    p=enc:<HEX>; api_key=... sends apiKey (OpenSubsonic apiKeyAuthentication).
  - An error envelope raises errors.<Class> chosen by its code (40 CredentialError,
    50 AuthError, 70 DataNotFoundError, ...); the code itself is not kept.
  - stream/download/get_cover_art return the aiohttp response (read it with `await r.read()`);
    stream(byte_range="bytes=a-b") sends a Range header.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import re
import secrets
import struct
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid

import aiohttp
import libopensonic
from libopensonic import errors
from libopensonic.media.media_types import MusicFolder, StructuredLyrics
from mashumaro.exceptions import InvalidFieldValue, MissingField

API_VERSION = "1.16.1"
CLIENT_NAME = "musiclib-e2e"
SCAN_TIMEOUT_S = 120
REQUIRED_EXTENSIONS = ("formPost", "songLyrics", "transcodeOffset")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"


class CheckFailed(Exception):
    """A check found the server's answer wrong."""


@dataclasses.dataclass
class State:
    """The connection, the arguments and what earlier checks found."""

    args: argparse.Namespace
    conn: libopensonic.AsyncConnection
    extensions: set[str] = dataclasses.field(default_factory=set)
    artist: object = None
    album: object = None  # AlbumID3WithSongs of the first artist's first album
    song: object = None  # a Child of that album, as returned by getSong
    albums: list = dataclasses.field(default_factory=list)  # every AlbumID3, alphabetical
    album_songs: dict = dataclasses.field(default_factory=dict)  # album id -> [Child]
    song_ids: list = dataclasses.field(default_factory=list)  # every song id, album order
    all_song_ids: list = dataclasses.field(default_factory=list)  # search3 "": with no album too
    stream_body: bytes = b""
    scan_count: int = 0  # tracks in the library once the scan is done
    extra_connections: list = dataclasses.field(default_factory=list)


# ------------------------------------------------------------------------------ helpers


def ok(name: str) -> None:
    print(f"ok  {name}", flush=True)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def split_base_url(base_url: str) -> tuple[str, int]:
    """py-opensonic wants the scheme and host apart from the port."""
    parts = urllib.parse.urlsplit(base_url)
    expect(parts.scheme in ("http", "https") and parts.hostname,
           f"--base-url must look like http://HOST:PORT, got {base_url!r}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{host}", port


def connect(args: argparse.Namespace, **options) -> libopensonic.AsyncConnection:
    """A connection to the server; token auth unless options say otherwise."""
    base, port = split_base_url(args.base_url)
    if "api_key" not in options:
        options.setdefault("username", args.username)
        options.setdefault("password", args.app_password)
    return libopensonic.AsyncConnection(base, port=port, app_name=CLIENT_NAME, **options)


def extra_connection(state: State, **options) -> libopensonic.AsyncConnection:
    conn = connect(state.args, **options)
    state.extra_connections.append(conn)
    return conn


async def expect_sonic_error(call, error_class: type, code: int, what: str) -> None:
    """Awaits `call` and requires the Subsonic error `code` (mapped by the library to a class)."""
    try:
        result = await call
    except error_class:
        return
    except errors.SonicError as exc:
        raise CheckFailed(f"{what}: expected error {code} ({error_class.__name__}), "
                          f"got {type(exc).__name__}: {exc}") from exc
    raise CheckFailed(f"{what}: expected error {code} ({error_class.__name__}), "
                      f"got a success ({result!r})")


def raw_call(base_url: str, method: str, params: dict, headers: dict | None = None):
    """A GET without the library: returns (HTTP status, headers, body bytes)."""
    url = f"{base_url.rstrip('/')}/rest/{method}?{urllib.parse.urlencode(params)}"
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def envelope(status: int, body: bytes, what: str) -> dict:
    """The `subsonic-response` object of a JSON answer."""
    expect(status == 200, f"{what}: HTTP {status} (Subsonic answers 200, errors go in the "
                          f"envelope): {body[:300]!r}")
    try:
        return json.loads(body)["subsonic-response"]
    except (ValueError, KeyError) as exc:
        raise CheckFailed(f"{what}: not a JSON subsonic-response envelope: {body[:300]!r}") from exc


def token_params(username: str, password: str) -> dict:
    salt = secrets.token_hex(8)
    token = hashlib.md5((password + salt).encode("utf-8")).hexdigest()
    return {"u": username, "t": token, "s": salt, "v": API_VERSION, "c": CLIENT_NAME, "f": "json"}


def legacy_params(username: str, password: str) -> dict:
    return {"u": username, "p": "enc:" + password.encode("utf-8").hex(),
            "v": API_VERSION, "c": CLIENT_NAME, "f": "json"}


def flatten_artists(artists) -> list:
    return [artist for index in (artists.index or []) for artist in (index.artist or [])]


def ids(items) -> list[str]:
    return [item.id for item in (items or [])]


def search_word(title: str) -> str:
    """The longest word of a title (at least 3 letters or digits), else the whole title."""
    words = [w for w in re.findall(r"\w+", title) if len(w) >= 3]
    return max(words, key=len) if words else title


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG or baseline/progressive JPEG, None when it cannot tell."""
    if data.startswith(PNG_SIGNATURE) and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if not data.startswith(JPEG_SIGNATURE):
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # start of frame
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def expect_image(data: bytes, what: str) -> str:
    kind = "PNG" if data.startswith(PNG_SIGNATURE) else "JPEG" if data.startswith(JPEG_SIGNATURE) else None
    expect(kind is not None, f"{what}: not a PNG or JPEG (first bytes {data[:16]!r})")
    return kind


async def read_binary(response, what: str, expected_status: int = 200) -> bytes:
    body = await response.read()
    expect(response.status == expected_status,
           f"{what}: HTTP {response.status}, expected {expected_status}")
    return body


async def walk_album_list(conn, list_type: str, page_size: int = 500) -> list:
    """Every album of getAlbumList2 `list_type`, paged with size/offset."""
    albums, seen = [], set()
    while True:
        page = await conn.get_album_list2(list_type, size=page_size, offset=len(albums))
        new = [album for album in page if album.id not in seen]
        expect(len(new) == len(page), f"getAlbumList2 {list_type}: offset {len(albums)} repeats "
                                      f"albums of an earlier page")
        albums += page
        seen.update(ids(page))
        if len(page) < page_size:
            return albums


# ------------------------------------------------------------------------------ checks


async def check_authentication(state: State) -> None:
    args = state.args
    expect(await state.conn.ping() is True, "ping did not answer ok")
    ok("ping (token auth t+s, form POST to /rest/ping.view)")

    get_conn = extra_connection(state, use_get=True, use_views=False)
    expect(await get_conn.ping() is True, "ping over GET did not answer ok")
    ok("ping (token auth, GET query string to /rest/ping)")

    wrong = extra_connection(state, password=args.app_password + "-wrong")
    await expect_sonic_error(wrong.ping(), errors.CredentialError, 40, "ping with a wrong password")
    ok("wrong password -> error 40")

    legacy = extra_connection(state, legacy_auth=True)
    expect(await legacy.ping() is True, "ping with legacy auth (p=enc:HEX, upper case) failed")
    ok("ping (legacy auth p=enc:<HEX> through the library)")

    status, _, body = raw_call(args.base_url, "ping", legacy_params(args.username, args.app_password))
    response = envelope(status, body, "ping with p=enc:<hex>")
    expect(response.get("status") == "ok", f"ping with p=enc:<hex> answered {response}")
    expect(bool(response.get("version")), f"the envelope has no version: {response}")
    expect(response.get("openSubsonic") is True, f"the envelope lacks openSubsonic: true: {response}")
    expect(isinstance(response.get("type"), str) and isinstance(response.get("serverVersion"), str),
           f"an OpenSubsonic envelope needs type and serverVersion: {response}")
    ok(f"ping via urllib (p=enc:<hex>, f=json): {response['type']} {response['serverVersion']}, "
       f"API {response['version']}")

    status, _, body = raw_call(args.base_url, "ping.view",
                               legacy_params(args.username, args.app_password + "-wrong"))
    response = envelope(status, body, "ping with a wrong p=enc:<hex>")
    expect(response.get("status") == "failed" and response.get("error", {}).get("code") == 40,
           f"a wrong p=enc:<hex> should answer error 40, got {response}")
    ok("wrong p=enc:<hex> via urllib -> error 40")


async def check_license(state: State) -> None:
    response = await state.conn.get_license()
    expect(response.get("license", {}).get("valid") is True, f"getLicense is not valid: {response}")
    ok("getLicense (valid)")


async def check_extensions(state: State) -> None:
    extensions = await state.conn.get_open_subsonic_extensions()
    state.extensions = {extension.name for extension in extensions}
    missing = [name for name in REQUIRED_EXTENSIONS if name not in state.extensions]
    expect(not missing, f"getOpenSubsonicExtensions lacks {missing}; has {sorted(state.extensions)}")
    ok(f"getOpenSubsonicExtensions ({', '.join(sorted(state.extensions))})")

    if "apiKeyAuthentication" in state.extensions:
        keyed = extra_connection(state, api_key=state.args.app_password)
        expect(await keyed.ping() is True, "ping with apiKey failed")
        info = await keyed.token_info()
        expect(info.username == state.args.username,
               f"tokenInfo names {info.username!r}, expected {state.args.username!r}")
        ok("apiKey auth: ping and tokenInfo")


async def check_scan(state: State) -> None:
    conn = state.conn
    try:
        started = await conn.start_scan()
        ok(f"startScan (scanning={started.scanning}, count={started.count})")
    except errors.AuthError:
        expect(not state.args.admin, "startScan refused an admin (error 50)")
        ok("startScan refused to a non-admin (error 50)")
    deadline = time.monotonic() + SCAN_TIMEOUT_S
    while True:
        status = await conn.get_scan_status()
        if not status.scanning and (status.count or 0) > 0:
            break
        expect(time.monotonic() < deadline, f"getScanStatus after {SCAN_TIMEOUT_S} s: "
                                            f"scanning={status.scanning}, count={status.count} "
                                            f"(expected a finished scan with count > 0)")
        await asyncio.sleep(0.5)
    state.scan_count = status.count
    ok(f"getScanStatus (finished, count={status.count})")


async def check_music_folders(state: State) -> None:
    # py-opensonic 10.4.1's get_music_folders() iterates over the "musicFolders" object itself
    # instead of its "musicFolder" array, so it fails on every spec-conforming answer. Ask with
    # urllib (token auth) and parse each folder with the library's MusicFolder type instead.
    args = state.args
    status, _, body = raw_call(args.base_url, "getMusicFolders.view",
                               token_params(args.username, args.app_password))
    response = envelope(status, body, "getMusicFolders")
    expect(response.get("status") == "ok", f"getMusicFolders answered {response}")
    listed = response.get("musicFolders", {}).get("musicFolder")
    expect(isinstance(listed, list), f"getMusicFolders: musicFolders.musicFolder is not an array: "
                                     f"{response.get('musicFolders')!r}")
    folders = [MusicFolder.from_dict(folder) for folder in listed]
    expect(len(folders) > 0, "getMusicFolders returned no folder")
    ok(f"getMusicFolders via urllib, token auth ({len(folders)}: "
       f"{', '.join(f'{f.id} {f.name!r}' for f in folders)})")


async def check_browsing(state: State) -> None:
    conn = state.conn
    artists = flatten_artists(await conn.get_artists())
    expect(len(artists) > 0, "getArtists returned no artist")
    ok(f"getArtists ({len(artists)} artists)")

    first = artists[0]
    state.artist = await conn.get_artist(first.id)
    expect(state.artist.id == first.id, f"getArtist {first.id} answered artist {state.artist.id}")
    expect(len(state.artist.album or []) > 0, f"getArtist {first.name!r} has no album")
    ok(f"getArtist {first.name!r} ({len(state.artist.album)} albums)")

    state.album = await conn.get_album(state.artist.album[0].id)
    expect(len(state.album.song or []) > 0, f"getAlbum {state.album.name!r} has no song")
    expect(state.album.song_count == len(state.album.song),
           f"getAlbum {state.album.name!r}: songCount {state.album.song_count} "
           f"but {len(state.album.song)} songs")
    ok(f"getAlbum {state.album.name!r} ({len(state.album.song)} songs)")

    wanted = state.album.song[0]
    state.song = await conn.get_song(wanted.id)
    expect(state.song.id == wanted.id and state.song.title == wanted.title,
           f"getSong {wanted.id} answered {state.song.id} {state.song.title!r}")
    expect(state.song.album_id in (None, state.album.id),
           f"getSong: albumId {state.song.album_id}, expected {state.album.id}")
    ok(f"getSong {state.song.title!r}")


async def check_library_walk(state: State) -> None:
    """Every album (getAlbumList2 alphabeticalByName, pages of 500) and every song in them."""
    conn = state.conn
    state.albums = await walk_album_list(conn, "alphabeticalByName")
    expect(len(state.albums) > 0, "getAlbumList2 alphabeticalByName returned no album")
    for album in state.albums:
        full = await conn.get_album(album.id)
        songs = full.song or []
        expect(full.song_count == len(songs),
               f"getAlbum {album.name!r}: songCount {full.song_count} but {len(songs)} songs")
        state.album_songs[album.id] = songs
        state.song_ids += [song.id for song in songs if song.id not in state.song_ids]
    expect(state.album.id in state.album_songs,
           f"album {state.album.name!r} of getArtist is missing from alphabeticalByName")
    ok(f"walked getAlbumList2 alphabeticalByName + getAlbum: {len(state.albums)} albums, "
       f"{len(state.song_ids)} songs")


async def check_album_lists(state: State) -> None:
    for list_type in ("newest", "random", "alphabeticalByName", "frequent", "starred"):
        albums = await state.conn.get_album_list2(list_type, size=50)
        if list_type in ("newest", "random", "alphabeticalByName"):
            expect(len(albums) == min(50, len(state.albums)),
                   f"getAlbumList2 {list_type} size=50: {len(albums)} albums of {len(state.albums)}")
        ok(f"getAlbumList2 {list_type} ({len(albums)})")


async def check_random_songs(state: State) -> None:
    songs = await state.conn.get_random_songs(size=3)
    expect(len(songs) == min(3, len(state.song_ids)),
           f"getRandomSongs size=3 returned {len(songs)} songs")
    for song in songs:
        if song.id not in state.song_ids:
            # Songs without an album tag are on no album; they must still exist.
            found = await state.conn.get_song(song.id)
            expect(found.id == song.id and not getattr(found, "album_id", None),
                   f"getRandomSongs returned {song.id}, which no album lists")
    ok("getRandomSongs size=3")


async def check_genres(state: State) -> None:
    genres = await state.conn.get_genres()
    names = {genre.value for genre in genres}
    if state.song.genre:
        expect(state.song.genre in names,
               f"getGenres lacks {state.song.genre!r} (genre of {state.song.title!r})")
    ok(f"getGenres ({len(genres)})")


async def check_search(state: State) -> None:
    conn = state.conn
    found, page_size = [], 10
    max_pages = len(state.song_ids) // page_size + 2
    for _ in range(max_pages):
        result = await conn.search3("", artist_count=0, album_count=0,
                                    song_count=page_size, song_offset=len(found))
        page = ids(result.song)
        repeated = set(page) & set(found)
        expect(not repeated, f"search3 \"\" songOffset={len(found)} repeats songs of earlier "
                             f"pages ({len(repeated)}): the paging order is not stable")
        found += page
        if len(page) < page_size:
            break
    else:
        raise CheckFailed(f"search3 \"\" still returns full pages after {len(found)} songs; "
                          f"the albums hold {len(state.song_ids)}")
    missing = set(state.song_ids) - set(found)
    expect(not missing, f"search3 \"\" misses {len(missing)} songs of the albums")
    state.all_song_ids = found
    # Songs without an album tag are in no album but must still be in "everything".
    for extra in set(found) - set(state.song_ids):
        song = await conn.get_song(extra)
        expect(not getattr(song, "album_id", None),
               f"search3 \"\" returned {extra}, which is on an album the walk did not see")
    expect(len(set(found)) == state.scan_count,
           f"search3 \"\" holds {len(set(found))} songs, the library {state.scan_count}")
    ok(f"search3 \"\" paged by {page_size}: {len(found)} songs = the whole library")

    word = search_word(state.song.title)
    offset = 0
    while True:
        result = await conn.search3(word, artist_count=20, album_count=20,
                                    song_count=100, song_offset=offset)
        page = ids(result.song)
        if state.song.id in page:
            break
        expect(len(page) == 100 and offset < len(state.song_ids),
               f"search3 {word!r} does not find {state.song.title!r}")
        offset += 100
    ok(f"search3 {word!r} finds {state.song.title!r}")


async def check_starring(state: State) -> None:
    conn, song, album = state.conn, state.song, state.album
    await conn.star(sids=[song.id], album_ids=[album.id])
    starred = await conn.get_starred2()
    expect(song.id in ids(starred.song), "getStarred2 lacks the starred song")
    expect(album.id in ids(starred.album), "getStarred2 lacks the starred album")
    expect((await conn.get_song(song.id)).starred is not None, "getSong of a starred song has no starred")
    starred_albums = await conn.get_album_list2("starred", size=500)
    expect(album.id in ids(starred_albums), "getAlbumList2 starred lacks the starred album")
    ok("star song + album -> getStarred2, getSong.starred, getAlbumList2 starred")

    await conn.unstar(sids=[song.id], album_ids=[album.id])
    starred = await conn.get_starred2()
    expect(song.id not in ids(starred.song), "getStarred2 still has the unstarred song")
    expect(album.id not in ids(starred.album), "getStarred2 still has the unstarred album")
    ok("unstar -> gone from getStarred2")


async def check_rating(state: State) -> None:
    conn, album = state.conn, state.album
    await conn.set_rating(album.id, 4)
    rating = (await conn.get_album(album.id)).user_rating
    expect(rating in (None, 4), f"setRating 4 on an album, getAlbum says userRating {rating}")
    await conn.set_rating(album.id, 0)
    shown = "read back by getAlbum" if rating == 4 else "getAlbum does not report userRating"
    ok(f"setRating 4 then 0 on album {album.name!r} ({shown})")


async def check_scrobble(state: State) -> None:
    conn, song = state.conn, state.song
    await conn.scrobble(song.id, submission=False)
    playing = await conn.get_now_playing()
    mine = [e for e in playing if e.id == song.id and e.username == state.args.username]
    expect(mine, f"getNowPlaying lacks {song.title!r} for {state.args.username!r}: "
                 f"{[(e.username, e.id) for e in playing]}")
    ok("scrobble submission=false -> getNowPlaying")

    await conn.scrobble(song.id, submission=True)
    ok("scrobble submission=true")
    for list_type in ("frequent", "recent"):
        albums = await conn.get_album_list2(list_type, size=500)
        expect(state.album.id in ids(albums),
               f"getAlbumList2 {list_type} lacks the album of the scrobbled song")
    ok("getAlbumList2 frequent and recent hold the scrobbled album")


def three_songs(state: State) -> list[str]:
    expect(len(state.song_ids) >= 3, f"the library needs 3 songs, has {len(state.song_ids)}")
    return state.song_ids[:3]


async def find_playlist(conn, name: str):
    return next((p for p in await conn.get_playlists() if p.name == name), None)


async def check_playlists(state: State) -> None:
    conn = state.conn
    first, second, third = three_songs(state)
    name = f"e2e {secrets.token_hex(4)}"
    await conn.create_playlist(name=name, song_ids=[first, second])
    created = await find_playlist(conn, name)
    expect(created is not None, f"getPlaylists lacks the new playlist {name!r}")
    expect(created.song_count == 2, f"getPlaylists: songCount {created.song_count}, expected 2")
    ok("createPlaylist with 2 songs -> getPlaylists")

    await conn.update_playlist(created.id, song_ids_to_add=[third], song_indices_to_remove=[0])
    playlist = await conn.get_playlist(created.id)
    expect(ids(playlist.entry) == [second, third],
           f"after updatePlaylist (+1 song, -index 0) getPlaylist has {ids(playlist.entry)}, "
           f"expected {[second, third]}")
    expect(playlist.song_count == 2, f"getPlaylist: songCount {playlist.song_count}, expected 2")
    ok("updatePlaylist songIdToAdd + songIndexToRemove=0 -> getPlaylist order")

    await conn.delete_playlist(created.id)
    expect(await find_playlist(conn, name) is None, "getPlaylists still has the deleted playlist")
    ok("deletePlaylist")


async def check_play_queue(state: State) -> None:
    conn = state.conn
    first, second, _ = three_songs(state)
    await conn.save_play_queue([first, second], current=second, position=12345)
    queue = await conn.get_play_queue()
    expect(ids(queue.entry) == [first, second],
           f"getPlayQueue entries {ids(queue.entry)}, expected {[first, second]}")
    expect(queue.current == second, f"getPlayQueue current {queue.current}, expected {second}")
    expect(queue.position == 12345, f"getPlayQueue position {queue.position}, expected 12345")
    expect(queue.username == state.args.username, f"getPlayQueue username {queue.username!r}")
    ok("savePlayQueue -> getPlayQueue (entries, current, position)")


async def check_user(state: State) -> None:
    user = await state.conn.get_user(state.args.username)
    expect(user.username == state.args.username, f"getUser answered {user.username!r}")
    expect(user.admin_role == state.args.admin,
           f"getUser adminRole {user.admin_role}, expected {state.args.admin}")
    expect(user.stream_role, "getUser: streamRole is false")
    ok(f"getUser {user.username!r} (adminRole={user.admin_role})")


async def check_streaming(state: State) -> None:
    conn, song = state.conn, state.song
    expect(isinstance(song.size, int) and song.size > 1024,
           f"getSong {song.title!r}: size {song.size!r}, expected more than 1024 bytes")
    response = await conn.stream(song.id)
    state.stream_body = await read_binary(response, "stream")
    expect(len(state.stream_body) == song.size,
           f"stream: {len(state.stream_body)} bytes, getSong size {song.size}")
    ok(f"stream ({len(state.stream_body)} bytes = size)")

    response = await conn.stream(song.id, byte_range="bytes=0-1023")
    part = await read_binary(response, "stream Range bytes=0-1023", expected_status=206)
    expect(len(part) == 1024, f"stream Range bytes=0-1023: {len(part)} bytes")
    expect(part == state.stream_body[:1024], "stream Range bytes=0-1023: not the file's first bytes")
    content_range = response.headers.get("Content-Range", "")
    expect(content_range == f"bytes 0-1023/{song.size}",
           f"stream Range: Content-Range {content_range!r}, expected 'bytes 0-1023/{song.size}'")
    ok("stream Range bytes=0-1023 -> 206, 1024 bytes")

    response = await conn.download(song.id)
    body = await read_binary(response, "download")
    expect(body == state.stream_body, f"download: {len(body)} bytes, differs from the stream")
    ok(f"download ({len(body)} bytes)")


async def check_cover_art(state: State) -> None:
    conn = state.conn
    album = next((a for a in state.albums if a.cover_art), state.album)
    cover_id = album.cover_art or album.id
    image = await read_binary(await conn.get_cover_art(cover_id, size=64), "getCoverArt")
    kind = expect_image(image, f"getCoverArt {cover_id}")
    size = image_size(image)
    if size:
        expect(max(size) <= 64, f"getCoverArt size=64 answered a {size[0]}x{size[1]} {kind}")
    shown = f"{size[0]}x{size[1]}" if size else "size unread"
    ok(f"getCoverArt size=64 of {album.name!r}: {kind} {shown}")

    # musiclib answers every cover id with an image: the placeholder when there is no cover,
    # also for an id nothing has (clients then show the placeholder, not a broken image).
    unknown = str(uuid.uuid4())
    image = await read_binary(await conn.get_cover_art(unknown, size=64), "getCoverArt placeholder")
    kind = expect_image(image, f"getCoverArt of the unknown id {unknown}")
    size = image_size(image)
    if size:
        expect(max(size) <= 64, f"placeholder size=64 answered {size[0]}x{size[1]}")
    ok(f"getCoverArt of an id without a cover -> placeholder {kind}")


async def check_lyrics(state: State) -> None:
    # getLyrics always carries a value (an empty string when there are none): the client
    # refuses an element without one.
    # The stand-in LRCLIB answers a synced record for every song.
    plain = await state.conn.get_lyrics(artist=state.song.artist, title=state.song.title)
    expect(isinstance(plain.value, str) and plain.value, f"getLyrics value {plain.value!r}")
    ok(f"getLyrics ({len(plain.value)} characters)")
    missing = await state.conn.get_lyrics(artist="Nobody", title="No Such Song")
    expect(missing.value == "", f"getLyrics of an unknown song: {missing.value!r}")
    ok("getLyrics of an unknown song -> empty value")
    lyrics = await state.conn.get_lyrics_by_song_id(state.song.id)
    expect(len(lyrics) == 1, f"getLyricsBySongId answered {len(lyrics)} entries")
    entry = lyrics[0]
    expect(entry.synced and len(entry.line) > 1, f"getLyricsBySongId entry {entry!r}")
    expect(all(line.start is not None for line in entry.line), "synced lines carry start")
    ok(f"getLyricsBySongId (1 synced entry, {len(entry.line)} lines, lang {entry.lang})")

    # songLyrics version 2: the same lyrics with `enhanced=true`, read by the library's type.
    if "songLyrics" in state.extensions:
        args = state.args
        params = {**token_params(args.username, args.app_password), "id": state.song.id,
                  "enhanced": "true"}
        status, _, body = raw_call(args.base_url, "getLyricsBySongId", params)
        answer = envelope(status, body, "getLyricsBySongId enhanced=true")
        layers = [StructuredLyrics.from_dict(entry)
                  for entry in answer["lyricsList"]["structuredLyrics"]]
        expect([layer.kind for layer in layers][:1] == ["main"],
               f"enhanced lyrics kinds: {[layer.kind for layer in layers]}")
        expect(len(layers[0].line) == len(entry.line),
               f"enhanced main layer: {len(layers[0].line)} lines, version 1 had {len(entry.line)}")
        for cue_line in layers[0].cue_line or []:
            data = cue_line.value.encode("utf-8")
            for cue in cue_line.cue:
                expect(data[cue.byte_start:cue.byte_end + 1].decode("utf-8") == cue.value,
                       f"cue {cue.value!r} is not bytes {cue.byte_start}-{cue.byte_end}")
        ok(f"getLyricsBySongId enhanced=true ({len(layers)} layer(s), main first)")


async def check_transcoding(state: State) -> None:
    if "transcoding" not in state.extensions:
        raise CheckFailed("getOpenSubsonicExtensions lacks transcoding")
    conn, song = state.conn, state.song
    # A client that plays nothing as it is and takes MP3 at 128 kbit/s.
    client = {
        "name": "e2e", "platform": "python",
        "maxTranscodingAudioBitrate": 128000,
        "directPlayProfiles": [],
        "transcodingProfiles": [{"container": "mp3", "audioCodec": "mp3", "protocol": "http",
                                 "maxAudioChannels": 2}],
    }
    decision = await conn.get_transcode_decision(song.id, "song", client)
    expect(not decision.can_direct_play and decision.can_transcode,
           f"getTranscodeDecision: {decision!r}")
    target = decision.transcode_stream
    expect(target is not None and target.codec == "mp3" and target.audio_bitrate <= 128000,
           f"getTranscodeDecision target {target!r}")
    expect(decision.source_stream is not None and decision.source_stream.codec,
           f"getTranscodeDecision source {decision.source_stream!r}")
    response = await conn.get_transcode_stream(song.id, "song", decision.transcode_params)
    body = await read_binary(response, "getTranscodeStream")
    expect(body[:3] == b"ID3" or (body[0] == 0xFF and body[1] & 0xE0 == 0xE0),
           f"getTranscodeStream is not MP3: {body[:8]!r}")
    ok(f"getTranscodeDecision ({target.codec} {target.audio_bitrate} bit/s) and "
       f"getTranscodeStream ({len(body)} bytes of MP3)")

    # A client that plays the original's container and codec gets it as it is.
    source = decision.source_stream
    direct = {"name": "e2e", "platform": "python",
              "directPlayProfiles": [{"containers": [source.container],
                                      "audioCodecs": [source.codec], "protocols": ["http"]}]}
    decision = await conn.get_transcode_decision(song.id, "song", direct)
    expect(decision.can_direct_play, f"getTranscodeDecision for the original: {decision!r}")
    response = await conn.get_transcode_stream(song.id, "song", decision.transcode_params)
    body = await read_binary(response, "getTranscodeStream direct")
    expect(body == state.stream_body, "getTranscodeStream direct is not the original's bytes")
    ok(f"getTranscodeDecision direct play ({source.container}/{source.codec}): the original")


async def check_folders(state: State) -> None:
    """getIndexes and getMusicDirectory follow the import folder's tree: walking it from the
    top reaches every song of the library once, each in the folder its path names."""
    conn = state.conn
    indexes = await conn.get_indexes(music_folder_id=1)
    top = [artist for group in (indexes.index or []) for artist in (group.artist or [])]
    expect(len(top) > 0, "getIndexes (music folder 1) listed no folder")
    seen: list[str] = [child.id for child in (indexes.child or []) if not child.is_dir]
    directories = 0
    pending = [(entry.id, entry.name) for entry in top]
    while pending:
        folder_id, name = pending.pop()
        directory = await conn.get_music_directory(folder_id)
        directories += 1
        expect(directory.name == name, f"getMusicDirectory {folder_id}: name {directory.name!r}, "
                                       f"expected {name!r}")
        for child in directory.child or []:
            if child.is_dir:
                expect(child.parent == folder_id, f"folder {child.title!r}: parent {child.parent}")
                pending.append((child.id, child.title))
            else:
                seen.append(child.id)
    expect(len(seen) == len(set(seen)), "a song is in two folders")
    expect(set(seen) == set(state.all_song_ids),
           f"the folders hold {len(set(seen))} songs, the library {len(set(state.all_song_ids))}")
    ok(f"getIndexes + getMusicDirectory: {directories} folders, {len(seen)} songs, each once")


async def check_shares(state: State) -> None:
    """createShare / getShares / updateShare / deleteShare, and the public page and stream the
    share's url opens without credentials."""
    conn = state.conn
    first, second = state.song_ids[0], state.song_ids[1]
    expires = time.time() + 86_400
    share = await conn.create_share(shids=[first, second], description="For you", expires=expires)
    expect([entry.id for entry in share.entry or []] == [first, second],
           f"createShare entries {[entry.id for entry in share.entry or []]}")
    expect(share.url.endswith(f"/s/{share.id}") and share.url.startswith("http"),
           f"createShare url {share.url!r}")
    expect(share.description == "For you" and share.expires is not None, f"createShare {share!r}")
    ok(f"createShare ({share.url})")
    # The link works without any credentials: the page, the share's JSON and its stream.
    with urllib.request.urlopen(share.url, timeout=30) as response:
        page = response.read().decode()
    expect('property="og:title"' in page, "the share's page has no og:title")
    api = f"{state.args.base_url}/api/v1/shared/{share.id}"
    with urllib.request.urlopen(api, timeout=30) as response:
        opened = json.loads(response.read())
    expect([track["id"] for track in opened["tracks"]] == [first, second], f"/shared answered {opened}")
    request = urllib.request.Request(f"{api}/tracks/{first}/stream", headers={"Range": "bytes=0-1023"})
    with urllib.request.urlopen(request, timeout=30) as response:
        expect(response.status == 206 and len(response.read()) == 1024, "the shared stream")
    ok("the share's page, tracks and stream open without credentials")
    # py-opensonic 10.4.1's update_share() puts its `expires` argument itself in the form as
    # a key (`{expires: ...}` instead of `{'expires': ...}`), so aiohttp cannot encode the
    # request: call updateShare with urllib (token auth) and read it back with the library.
    args = state.args
    status, _, body = raw_call(args.base_url, "updateShare.view",
                               {**token_params(args.username, args.app_password),
                                "id": share.id, "description": "Changed"})
    response = envelope(status, body, "updateShare")
    expect(response.get("status") == "ok", f"updateShare answered {response}")
    listed = {item.id: item for item in await conn.get_shares()}
    expect(share.id in listed and listed[share.id].description == "Changed",
           f"getShares after updateShare: {listed.get(share.id)!r}")
    expect(listed[share.id].visit_count == 1, f"visitCount {listed[share.id].visit_count}, expected 1")
    ok(f"getShares + updateShare ({len(listed)} shares, 1 visit counted)")
    await conn.delete_share(share.id)
    expect(share.id not in {item.id for item in await conn.get_shares()}, "deleteShare left it listed")
    try:
        urllib.request.urlopen(api, timeout=30)
        raise CheckFailed("a revoked share still opens")
    except urllib.error.HTTPError as error:
        expect(error.code == 410, f"a revoked share answered {error.code}, expected 410")
    ok("deleteShare: the link answers 410")


async def check_replay_gain(state: State) -> None:
    """OpenSubsonic `replayGain` on songs, parsed by the library's ReplayGain type: the
    server measures files without ReplayGain tags in the background after the scan."""
    deadline = time.monotonic() + 300
    while True:
        song = await state.conn.get_song(state.song.id)
        gain = song.replay_gain
        # The element comes once a value is known (from tags, or measured).
        if gain is not None and gain.track_gain is not None:
            break
        expect(time.monotonic() < deadline, f"getSong {song.title!r}: no trackGain after 300 s")
        await asyncio.sleep(1)
    expect(-30.0 < gain.track_gain < 30.0, f"trackGain {gain.track_gain}")
    expect(gain.track_peak is not None and 0.0 < gain.track_peak <= 2.0, f"trackPeak {gain.track_peak}")
    ok(f"getSong replayGain (trackGain {gain.track_gain:.2f} dB, trackPeak {gain.track_peak:.3f}, "
       f"albumGain {gain.album_gain})")



def podcast_server() -> tuple[str, object]:
    """A podcast host on loopback (the server runs with ALLOW_PRIVATE_URLS=true): a feed of
    one episode, its audio (a generated WAV) and the channel's image. Answers with the base
    URL and the server, to shut down."""
    import http.server
    import io
    import threading
    import wave

    audio = io.BytesIO()
    with wave.open(audio, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x10" * 8000 * 2)
    audio = audio.getvalue()
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")

    class Host(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            base = f"http://127.0.0.1:{self.server.server_port}"
            files = {
                "/feed.xml": ("application/rss+xml", (
                    '<?xml version="1.0"?><rss version="2.0" '
                    'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>'
                    "<title>E2E Podcast</title><description>Made by the test</description>"
                    f'<itunes:image href="{base}/cover.png"/>'
                    "<item><title>Episode one</title><guid>e2e-1</guid>"
                    "<pubDate>Tue, 03 Nov 2026 10:00:00 GMT</pubDate>"
                    f'<enclosure url="{base}/one.wav" type="audio/wav" length="{len(audio)}"/>'
                    "</item></channel></rss>").encode()),
                "/one.wav": ("audio/wav", audio),
                "/cover.png": ("image/png", png),
            }
            if self.path not in files:
                self.send_error(404)
                return
            content_type, body = files[self.path]
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Host)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.audio = audio
    return f"http://127.0.0.1:{server.server_port}", server


async def check_podcasts(state: State) -> None:
    conn = state.conn
    expect("getPodcastEpisode" in state.extensions, "getPodcastEpisode is not advertised")
    base, host = podcast_server()
    try:
        await conn.create_podcast_channel(f"{base}/feed.xml")
        channels = await conn.get_podcasts()
        channel = next((c for c in channels if c.url == f"{base}/feed.xml"), None)
        expect(channel is not None, f"getPodcasts: the new channel is missing ({channels!r})")
        expect(channel.title == "E2E Podcast", f"getPodcasts: title {channel.title!r}")
        expect(channel.episode and len(channel.episode) == 1, f"getPodcasts: episodes {channel.episode!r}")
        episode = channel.episode[0]
        expect(episode.title == "Episode one" and episode.stream_id is None,
               f"getPodcasts: episode {episode!r}")
        ok(f"createPodcastChannel + getPodcasts ({channel.title!r}, status {channel.status.value})")

        await conn.download_podcast_episode(episode.id)
        deadline = time.monotonic() + 120
        while True:
            episode = await conn.get_podcast_episode(episode.id)
            if episode.status.value == "completed":
                break
            expect(episode.status.value in ("new", "downloading"),
                   f"getPodcastEpisode: status {episode.status.value!r}")
            expect(time.monotonic() < deadline, "the episode was not downloaded within 120 s")
            await asyncio.sleep(0.5)
        expect(episode.stream_id, f"getPodcastEpisode: no streamId once completed ({episode!r})")
        ok(f"downloadPodcastEpisode -> completed ({episode.size} bytes)")

        response = await conn.stream(episode.stream_id, byte_range="bytes=0-99")
        part = await read_binary(response, "stream of an episode, Range bytes=0-99", expected_status=206)
        expect(part == host.audio[:100], "stream of an episode: not the file's first bytes")
        newest = await conn.get_newest_podcasts(count=5)
        expect(any(e.id == episode.id for e in newest), "getNewestPodcasts: the episode is missing")
        expect(await conn.refresh_podcasts(), "refreshPodcasts failed")
        ok("stream by streamId (206), getNewestPodcasts, refreshPodcasts")

        await conn.delete_podcast_episode(episode.id)
        episode = await conn.get_podcast_episode(episode.id)
        expect(episode.status.value == "deleted", f"deletePodcastEpisode: status {episode.status.value!r}")
        await conn.delete_podcast_channel(channel.id)
        left = [c for c in await conn.get_podcasts() if c.id == channel.id]
        expect(not left, "deletePodcastChannel: the channel is still listed")
        ok("deletePodcastEpisode, deletePodcastChannel")
    finally:
        host.shutdown()


async def check_index_queue(state: State) -> None:
    conn = state.conn
    expect("indexBasedQueue" in state.extensions, "indexBasedQueue is not advertised")
    first, second, _ = three_songs(state)
    await conn.save_play_queue_by_index([first, second, first], current_index=2, position=777)
    queue = await conn.get_play_queue_by_index()
    expect(ids(queue.entry) == [first, second, first],
           f"getPlayQueueByIndex entries {ids(queue.entry)}, expected a song twice")
    expect(queue.current_index == 2, f"getPlayQueueByIndex currentIndex {queue.current_index}, expected 2")
    expect(queue.position == 777, f"getPlayQueueByIndex position {queue.position}, expected 777")
    ok("savePlayQueueByIndex -> getPlayQueueByIndex (a song twice, the second one current)")


async def check_playback_report(state: State) -> None:
    conn = state.conn
    expect("playbackReport" in state.extensions, "playbackReport is not advertised")
    first, _, _ = three_songs(state)
    await conn.report_playback(first, "song", 0, "starting")
    await conn.report_playback(first, "song", 1500, "paused", playback_rate=1.5)
    entries = [e for e in await conn.get_now_playing() if e.id == first]
    expect(entries, "getNowPlaying lacks the reported song")
    entry = entries[0]
    expect(entry.state == "paused" and entry.position_ms == 1500,
           f"getNowPlaying timeline {entry.state!r} at {entry.position_ms}, expected paused at 1500")
    await conn.report_playback(first, "song", 1500, "stopped")
    ok("reportPlayback -> getNowPlaying (state, positionMs)")


async def check_radio(state: State) -> None:
    conn = state.conn
    name = f"e2e radio {secrets.token_hex(4)}"
    if not state.args.admin:
        await expect_sonic_error(
            conn.create_internet_radio_station("https://radio.example/live.mp3", name),
            errors.AuthError, 50, "createInternetRadioStation by a non-admin")
        ok("createInternetRadioStation refused to a non-admin (error 50)")
        return
    await conn.create_internet_radio_station("https://radio.example/live.mp3", name,
                                             homepage_url="https://radio.example/")
    stations = [s for s in await conn.get_internet_radio_stations() if s.name == name]
    expect(len(stations) == 1, f"getInternetRadioStations lacks the new station {name!r}")
    station = stations[0]
    expect(station.stream_url == "https://radio.example/live.mp3", f"streamUrl {station.stream_url!r}")
    await conn.update_internet_radio_station(station.id, "https://radio.example/hq.ogg", name + " HQ")
    changed = [s for s in await conn.get_internet_radio_stations() if s.id == station.id]
    expect(changed and changed[0].name == name + " HQ", "updateInternetRadioStation did not rename it")
    await conn.delete_internet_radio_station(station.id)
    left = [s for s in await conn.get_internet_radio_stations() if s.id == station.id]
    expect(not left, "deleteInternetRadioStation left the station")
    await expect_sonic_error(conn.delete_internet_radio_station(station.id),
                             errors.DataNotFoundError, 70, "deleting it again")
    ok("internet radio: create, list, update, delete (70 for an unknown id)")


async def check_accounts(state: State) -> None:
    conn = state.conn
    response = await conn.get_avatar(state.args.username)
    data = await read_binary(response, "getAvatar")
    expect_image(data, "getAvatar")
    ok("getAvatar answers an image")
    if not state.args.admin:
        return
    name = f"e2e-{secrets.token_hex(4)}"
    await conn.create_user(name, "first password", f"{name}@example.org", stream_role=True)
    newcomer = extra_connection(state, username=name, password="first password")
    user = await newcomer.get_user(name)
    expect(user.username == name and not user.admin_role, f"getUser as the new user: {user!r}")
    await newcomer.change_password(name, "second password")
    await expect_sonic_error(newcomer.ping(), errors.CredentialError, 40,
                             "the old app password after changePassword")
    newcomer = extra_connection(state, username=name, password="second password")
    await newcomer.ping()
    await conn.update_user(name, password="third password", admin_role=True)
    newcomer = extra_connection(state, username=name, password="third password")
    expect((await newcomer.get_user(name)).admin_role, "updateUser adminRole=true did not stick")
    await conn.delete_user(name)
    await expect_sonic_error(conn.get_user(name), errors.DataNotFoundError, 70,
                             "getUser of the deleted account")
    ok("createUser, changePassword (own), updateUser, deleteUser")


async def check_hls(state: State) -> None:
    first, _, _ = three_songs(state)
    # py-opensonic calls the method `hls` (musiclib answers it as `hls.m3u8`).
    playlist = await state.conn.hls(first)
    text = (playlist if isinstance(playlist, bytes) else await playlist.read()).decode()
    expect(text.startswith("#EXTM3U"), f"hls.m3u8 is not a playlist: {text[:80]!r}")
    segment = next(line for line in text.splitlines() if line and not line.startswith("#"))
    base = state.args.base_url.rstrip("/")
    with urllib.request.urlopen(f"{base}/rest/{segment}", timeout=60) as reply:
        body = reply.read()
    expect(body[:1] == b"\x47", "the first HLS segment is not MPEG-TS")
    ok(f"hls.m3u8 and its first segment ({len(body)} bytes)")


STEPS = [
    ("authentication", check_authentication),
    ("getLicense", check_license),
    ("getOpenSubsonicExtensions", check_extensions),
    ("scan", check_scan),
    ("getMusicFolders", check_music_folders),
    ("browsing", check_browsing),
    ("library walk", check_library_walk),
    ("getAlbumList2", check_album_lists),
    ("getRandomSongs", check_random_songs),
    ("getGenres", check_genres),
    ("search3", check_search),
    ("star/unstar", check_starring),
    ("setRating", check_rating),
    ("scrobble", check_scrobble),
    ("playlists", check_playlists),
    ("folders", check_folders),
    ("shares", check_shares),
    ("play queue", check_play_queue),
    ("getUser", check_user),
    ("indexBasedQueue", check_index_queue),
    ("playbackReport", check_playback_report),
    ("internet radio", check_radio),
    ("accounts and getAvatar", check_accounts),
    ("hls.m3u8", check_hls),
    ("stream/download", check_streaming),
    ("transcoding", check_transcoding),
    ("getCoverArt", check_cover_art),
    ("getLyrics and getLyricsBySongId", check_lyrics),
    ("replayGain", check_replay_gain),
    ("podcasts", check_podcasts),
]


# ------------------------------------------------------------------------------ running


def error_codes() -> dict[type, str]:
    codes: dict[type, list[str]] = {}
    for code, error_class in errors.ERR_CODE_MAP.items():
        codes.setdefault(error_class, []).append(str(code))
    return {error_class: "/".join(numbers) for error_class, numbers in codes.items()}


def schema_error_chain(exc: BaseException) -> str:
    """mashumaro nests errors (a bad song inside an album): name each level, innermost last."""
    levels = []
    while exc is not None:
        if isinstance(exc, (MissingField, InvalidFieldValue)):
            text = str(exc)
            levels.append(text if len(text) <= 200 else text[:200] + "...")
        elif isinstance(exc, KeyError):
            levels.append(f"(JSON key {exc} absent)")
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(levels)


def describe(exc: BaseException) -> str:
    """A one-line reason for a failed step."""
    if isinstance(exc, CheckFailed):
        return str(exc)
    if isinstance(exc, errors.SonicError):
        code = error_codes().get(type(exc), "?")
        return f"the server answered Subsonic error {code} ({type(exc).__name__}): {exc}"
    if isinstance(exc, (MissingField, InvalidFieldValue)):
        return ("the response does not fit the OpenSubsonic schema py-opensonic parses: "
                + schema_error_chain(exc))
    if isinstance(exc, KeyError):
        return f"the response lacks {exc} (lists and their wrappers must always be present)"
    if isinstance(exc, aiohttp.ContentTypeError):
        return f"expected a JSON response, got Content-Type {exc.headers and exc.headers.get('Content-Type')}"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"HTTP {exc.status} {exc.message} from {exc.request_info.url}"
    if isinstance(exc, aiohttp.ClientError):
        return f"cannot talk to the server: {type(exc).__name__}: {exc}"
    return "unexpected error:\n" + "".join(traceback.format_exception(exc)).rstrip()


async def run(args: argparse.Namespace) -> int:
    state = State(args=args, conn=connect(args))
    try:
        for title, step in STEPS:
            try:
                await step(state)
            except Exception as exc:  # noqa: BLE001 - every failure becomes one clear line
                print(f"FAIL  {title}: {describe(exc)}", file=sys.stderr, flush=True)
                return 1
    finally:
        for conn in [state.conn, *state.extra_connections]:
            await conn.cleanup()
    print(f"all {len(STEPS)} Subsonic check groups passed ({libopensonic.__version__})", flush=True)
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="http://127.0.0.1:PORT")
    parser.add_argument("--username", required=True)
    parser.add_argument("--app-password", required=True, help="the user's Subsonic app password")
    parser.add_argument("--admin", action="store_true", help="the user is an admin")
    return parser.parse_args(argv)


def main() -> int:
    args = parse_args(sys.argv[1:])
    try:
        split_base_url(args.base_url)
    except CheckFailed as exc:
        print(f"FAIL  arguments: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
