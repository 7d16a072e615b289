#!/usr/bin/env bash
# Tests the Debian package the way a new machine gets it: installs it into a fresh Debian
# root (mmdebstrap, bookworm, with its Depends from the archive), checks what the
# maintainer scripts made (the musiclib user, /var/lib/musiclib, the conffile's owner and
# mode), verifies the unit with systemd-analyze, starts the server there as the unit would
# (its user, its config file, its state directory), signs in and uploads a track; then
# removes the package (the library stays) and purges it (library, settings and user go).
# Needs root (mmdebstrap, chroot). Installs mmdebstrap when missing.
#
#   packaging/test-deb.sh target/packages/musiclib_*.deb
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
. packaging/lib.sh
deb="$(realpath "$1")"
command -v mmdebstrap >/dev/null || apt_install mmdebstrap
command -v curl >/dev/null || apt_install curl

work="$(mktemp -d)"
root="$work/root"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
step() { echo "test-deb: $*" >&2; }

# The package's dependencies come from the archive with the root (its package lists are
# not kept in it); dpkg then refuses the package if any Depends is not met.
depends="$(dpkg-deb --field "$deb" Depends | sed 's/([^)]*)//g; s/ //g')"
step "making a fresh Debian root with $depends"
# (systemd too: systemd-analyze verifies the unit against it.)
mmdebstrap --quiet --variant=apt --include="ca-certificates,systemd,$depends" bookworm "$root" \
  "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
cp "$deb" "$root/tmp/musiclib.deb"
mount -t proc proc "$root/proc"

step "installing $(basename "$deb")"
chroot "$root" dpkg -i /tmp/musiclib.deb >&2

chroot "$root" getent passwd musiclib >/dev/null || fail "no musiclib user"
[ "$(chroot "$root" stat -c '%U %a' /var/lib/musiclib)" = "musiclib 750" ] \
  || fail "/var/lib/musiclib: $(chroot "$root" stat -c '%U %a' /var/lib/musiclib)"
[ "$(chroot "$root" stat -c '%U:%G %a' /etc/musiclib/musiclib.toml)" = "root:musiclib 640" ] \
  || fail "the conffile: $(chroot "$root" stat -c '%U:%G %a' /etc/musiclib/musiclib.toml)"
grep -q '^data_dir = "/var/lib/musiclib"' "$root/etc/musiclib/musiclib.toml" || fail "conffile data_dir"
grep -q '^# bind_address = ' "$root/etc/musiclib/musiclib.toml" || fail "conffile lacks the commented settings"
step "the package's files, user and conffile are in place"

step "systemd-analyze verify"
systemd-analyze verify --root="$root" /lib/systemd/system/musiclib.service >&2 \
  || fail "systemd-analyze verify"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
step "starting the server as the unit would, on port $port"
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  BIND_ADDRESS="127.0.0.1:$port" ADMIN_USERNAME=admin ADMIN_PASSWORD=package-test-password \
  runuser -u musiclib -- /usr/bin/musiclib --config /etc/musiclib/musiclib.toml serve \
  >"$work/server.log" 2>&1 &
server=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 120); do
  curl -fsS "$base/health" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server stopped"; }
  sleep 0.5
done
health="$(curl -fsS "$base/health")" || { cat "$work/server.log" >&2; fail "no /health"; }
grep -q '"status":"ok"' <<<"$health" || fail "health: $health"
token="$(curl -fsS "$base/api/v1/auth/login" -H 'content-type: application/json' \
  -d '{"username":"admin","password":"package-test-password"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
tone_wav "$work/tone.wav"
status="$(curl -sS -o "$work/upload.json" -w '%{http_code}' "$base/api/v1/tracks/upload" \
  -H "authorization: Bearer $token" -F "file=@$work/tone.wav;filename=Package Tone.wav")"
[ "$status" = 201 ] || fail "upload: $status $(cat "$work/upload.json")"
[ -f "$root/var/lib/musiclib/musiclib.db" ] || fail "no database in /var/lib/musiclib"
[ "$(chroot "$root" stat -c '%U' /var/lib/musiclib/musiclib.db)" = musiclib ] \
  || fail "the database is not the musiclib user's"
step "the server answers: $health; a track uploaded"
kill "$server"; wait "$server" 2>/dev/null || true; server=""

step "removing keeps the library"
chroot "$root" dpkg -r musiclib >&2
[ -f "$root/var/lib/musiclib/musiclib.db" ] || fail "remove deleted the library"
[ ! -e "$root/usr/bin/musiclib" ] || fail "remove left the binary"
step "purging removes the library, the settings and the user"
chroot "$root" dpkg -P musiclib >&2
[ ! -e "$root/var/lib/musiclib" ] || fail "purge left /var/lib/musiclib"
[ ! -e "$root/etc/musiclib" ] || fail "purge left /etc/musiclib"
! chroot "$root" getent passwd musiclib >/dev/null || fail "purge left the user"
echo "test-deb: ok ($(du -h "$deb" | cut -f1) package)"
