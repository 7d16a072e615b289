#!/usr/bin/env bash
# Checks that the Dockerfile and packaging/build-image.sh describe the same image: builds the
# Dockerfile's last stage with buildah (its base, debian:bookworm-slim, stood in for by
# Debian's minbase from mmdebstrap, under a name of its own, since no image registry can be
# reached; its build stage replaced by BINARY, as compiling inside it would need the
# registry's Rust image), then compares that image with the archive's: entrypoint, command,
# user, environment, volumes, ports, working directory, labels, the Dockerfile's health check,
# the installed packages and the files under /usr/bin, /etc and /data.
# Needs root; installs mmdebstrap, buildah and podman when missing.
#
#   packaging/test-dockerfile.sh ARCHIVE BINARY
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
. packaging/lib.sh
archive="$(realpath "$1")"
binary="$(realpath "$2")"
missing=()
for tool in mmdebstrap buildah podman; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
fail() { echo "test-dockerfile: FAIL: $*" >&2; exit 1; }
step() { echo "test-dockerfile: $*" >&2; }

work="$(mktemp -d)"
tag="test-dockerfile-$$"
base="localhost/$tag-base"
images=()
container=""
cleanup() {
  [ -z "$container" ] || buildah rm "$container" >/dev/null 2>&1 || true
  for image in "${images[@]}"; do podman rmi -f "$image" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

step "standing in for debian:bookworm-slim: Debian's minbase, slimmed as Debian's images are"
image_root "$work/base.tar"
container="$(buildah from scratch)"
buildah add --quiet "$container" "$work/base.tar" / >&2
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --cmd '["bash"]' "$container" >&2
buildah commit --quiet --rm "$container" "$base" >/dev/null
container=""
images+=("$base")
container="$(buildah from scratch)"
install -m 0755 --strip "$binary" "$work/musiclib"
buildah copy --quiet "$container" "$work/musiclib" /musiclib >&2
buildah commit --quiet --rm "$container" "localhost/$tag-binary" >/dev/null
container=""
images+=("localhost/$tag-binary")

step "building the Dockerfile's last stage (buildah bud)"
mkdir "$work/context"
git ls-files -z | xargs -0 cp --parents -t "$work/context"
python3 - Dockerfile "$work/context/Dockerfile" "localhost/$tag-binary" "$base" <<'PY'
import sys
text = open(sys.argv[1]).read()
start, end = text.index("# ---- the binary"), text.index("# ---- the image")
last = text[end:]
if "FROM docker.io/library/debian:bookworm-slim\n" not in last:
    raise SystemExit("test-dockerfile: the last stage is no longer FROM docker.io/library/debian:bookworm-slim")
last = last.replace("FROM docker.io/library/debian:bookworm-slim\n", f"FROM {sys.argv[4]}\n")
open(sys.argv[2], "w").write(text[:start] + f"FROM {sys.argv[3]} AS build\n\n" + last)
PY
buildah bud --quiet "${PODMAN_LIMITS[@]}" --pull=never --format docker -t "localhost/$tag-dockerfile" \
  "$work/context" >/dev/null || fail "buildah bud of the Dockerfile"
images+=("localhost/$tag-dockerfile")
script_image="$(load_image "$archive")" || fail "podman load"
images+=("$script_image")

describe() { # IMAGE → what both must agree on
  podman image inspect "$1" --format \
    'entrypoint {{json .Config.Entrypoint}}
cmd {{json .Config.Cmd}}
user {{.Config.User}}
env {{json .Config.Env}}
volumes {{json .Config.Volumes}}
ports {{json .Config.ExposedPorts}}
workdir {{.Config.WorkingDir}}
title {{index .Config.Labels "org.opencontainers.image.title"}}'
  podman_run --rm --entrypoint /bin/sh "$1" -c \
    'dpkg-query -W -f "\${Package} \${Version}\n"; find /usr/bin /usr/sbin /etc /data -printf "%p %u:%g %m\n" 2>/dev/null | grep -v -e "^/etc/hostname " -e "^/etc/hosts " -e "^/etc/resolv.conf " -e "^/etc/ld.so.cache "' \
    | sort
}
describe "localhost/$tag-dockerfile" >"$work/dockerfile.txt" || fail "reading the Dockerfile's image"
describe "$script_image" >"$work/script.txt" || fail "reading build-image.sh's image"
diff -u "$work/dockerfile.txt" "$work/script.txt" >&2 \
  || fail "the Dockerfile's image and build-image.sh's differ (above: - Dockerfile, + script)"
health="$(podman image inspect "localhost/$tag-dockerfile" --format '{{json .HealthCheck.Test}}')"
[ "$health" = '["CMD","/usr/bin/musiclib","healthcheck"]' ] || fail "the Dockerfile's health check: $health"
echo "test-dockerfile: ok ($(grep -c . "$work/script.txt") lines of configuration, packages and files agree)"
