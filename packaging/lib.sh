# Sourced by the packaging scripts (from the repository's root, after .ci/toolchain.sh): what
# more than one of them does.

# image_root OUT [MMDEBSTRAP_OPTION...]: a bookworm root as Debian's slim images are made
# (minbase; merged /usr by mmdebstrap's hook, without the usrmerge package and Perl;
# packaging/image/dpkg-slim.cfg's excludes), written to the tarball OUT. build-image.sh adds
# its set-up hooks; test-dockerfile.sh takes it as it is, for debian:bookworm-slim.
image_root() {
  local out="$1"; shift
  mmdebstrap --quiet --variant=minbase --dpkgopt=packaging/image/dpkg-slim.cfg \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "$@" \
    bookworm "$out" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
}

# PODMAN_LIMITS: the runtime and limits podman runs containers with on these machines (its
# default limits are refused): runc, and nofile/nproc below the host's hard limits.
podman_limits() {
  local nofile nproc
  nofile="$(ulimit -Hn)"; [ "$nofile" = unlimited ] || [ "$nofile" -gt 16384 ] && nofile=16384
  nproc="$(ulimit -Hu)"; [ "$nproc" = unlimited ] || [ "$nproc" -gt 8192 ] && nproc=8192
  PODMAN_LIMITS=(--runtime runc --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
}
podman_limits

# podman_run ARGS...: `podman run` with PODMAN_LIMITS. (Without systemd, podman says at each
# start of a health-checked container that it cannot time the checks; the tests run them
# themselves, so that line is left out.)
podman_run() {
  podman run "${PODMAN_LIMITS[@]}" "$@" 2> >(grep -v 'unable to get systemd connection' >&2)
}

# load_image ARCHIVE: loads an OCI archive into podman and prints the image's name.
load_image() {
  local loaded name
  loaded="$(podman load --quiet -i "$1")" || return 1
  name="$(sed -n 's/^Loaded image[^:]*: *//p' <<<"$loaded" | head -n 1)"
  [ -n "$name" ] || { echo "podman load named no image: $loaded" >&2; return 1; }
  echo "$name"
}

# tone_wav OUT: three seconds of a tone, tagged (RIFF INFO: title, artist, album) for the
# server's enrichment to read; what the package and image tests upload.
tone_wav() {
  python3 - "$1" <<'PY'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as out:
    out.setnchannels(1); out.setsampwidth(2); out.setframerate(44100)
    out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 20))) for i in range(44100 * 3)))
def field(key, text):
    data = text.encode() + b"\0"
    return key + struct.pack("<I", len(data)) + data + b"\0" * (len(data) % 2)
info = b"INFO" + field(b"INAM", "Image Tone") + field(b"IART", "The Containers") + field(b"IPRD", "Volume One")
with open(sys.argv[1], "r+b") as out:
    out.seek(0, 2)
    out.write(b"LIST" + struct.pack("<I", len(info)) + info)
    size = out.tell() - 8
    out.seek(4)
    out.write(struct.pack("<I", size))
PY
}
