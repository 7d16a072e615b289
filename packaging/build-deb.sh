#!/usr/bin/env bash
# Builds the Debian package of musiclib: the stripped release binary (carrying the web
# player), the systemd unit, /etc/musiclib/musiclib.toml (a conffile listing every setting,
# commented) and the maintainer scripts that make the `musiclib` system user. Packaged with
# dpkg-deb, Debian's own tool. Installs the Rust toolchain, Node.js and dpkg-dev when missing.
#
#   packaging/build-deb.sh [OUT_DIR]      (default target/packages)
#
# The release binary is built (packaging/build-release.sh) unless MUSICLIB_BINARY names one
# (the test command packages its debug build; it is stripped here).
# The last line printed is the path of the .deb.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
out="$(realpath -m "${1:-target/packages}")"
command -v dpkg-deb >/dev/null || apt_install dpkg-dev

binary="${MUSICLIB_BINARY:-$(packaging/build-release.sh | tail -n 1)}"

version="$("$binary" --version | awk '{print $2}')"
arch="$(dpkg --print-architecture)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/musiclib_${version}-1_${arch}"

# Stripped, as Debian's packaging strips binaries (the release profile strips too).
install -D -m 0755 --strip "$binary" "$root/usr/bin/musiclib"
install -D -m 0644 packaging/debian/musiclib.service "$root/lib/systemd/system/musiclib.service"
install -d -m 0755 "$root/etc/musiclib"
# Every setting, commented, with the package's state directory set.
"$binary" config --template \
  | sed 's|^# data_dir = .*|data_dir = "/var/lib/musiclib"|' >"$root/etc/musiclib/musiclib.toml"
chmod 0640 "$root/etc/musiclib/musiclib.toml"
install -D -m 0644 README.md "$root/usr/share/doc/musiclib/README.md"
install -D -m 0644 docs/running.md "$root/usr/share/doc/musiclib/running.md"
install -D -m 0644 docs/configuration.md "$root/usr/share/doc/musiclib/configuration.md"

install -d "$root/DEBIAN"
for script in postinst prerm postrm; do
  install -m 0755 "packaging/debian/$script" "$root/DEBIAN/$script"
done
echo /etc/musiclib/musiclib.toml >"$root/DEBIAN/conffiles"
size_kb="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat >"$root/DEBIAN/control" <<CONTROL
Package: musiclib
Version: ${version}-1
Architecture: ${arch}
Maintainer: musiclib developers <musiclib@localhost>
Installed-Size: ${size_kb}
Depends: ffmpeg, adduser, libc6 (>= 2.34), libgcc-s1
Suggests: postgresql-client, yt-dlp
Section: sound
Priority: optional
Homepage: https://localhost/musiclib
Description: self-hosted music library server
 musiclib serves a music library to a browser (its web player), Subsonic and
 OpenSubsonic apps and its own /api/v1: upload or import a folder, it identifies
 and tags every track, streams with transcoding, keeps playlists, likes, history
 and offline copies in sync, and fetches lyrics and covers.
 .
 This package runs it as the musiclib system service on the embedded default
 (SQLite and media under /var/lib/musiclib); settings are in
 /etc/musiclib/musiclib.toml.
CONTROL

mkdir -p "$out"
deb="$out/musiclib_${version}-1_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >&2
echo "$deb"
