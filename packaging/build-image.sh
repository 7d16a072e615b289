#!/usr/bin/env bash
# Builds musiclib's container image, the one the Dockerfile describes, without an image
# registry: the root from Debian's packages by mmdebstrap (minbase, as debian:bookworm-slim),
# set up by packaging/image/setup.sh (the same script and list of packages the Dockerfile
# runs), the binary, and the configuration read from the Dockerfile's last stage
# (packaging/image/dockerfile-config.py: user, volume, port, environment, health check,
# entrypoint), assembled by buildah into an OCI archive. Needs root (mmdebstrap, buildah);
# installs them when missing.
#
#   packaging/build-image.sh [OUT_DIR]      (default target/packages)
#
# The release binary is built (packaging/build-release.sh) unless MUSICLIB_BINARY names one
# (the test command packages its debug build; it is stripped here). The last line printed is
# the path of the OCI archive (`podman load -i`, `docker load -i`, `skopeo copy`); its image
# is named musiclib:VERSION.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
. packaging/lib.sh
out="$(realpath -m "${1:-target/packages}")"
missing=()
for tool in mmdebstrap buildah; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

binary="${MUSICLIB_BINARY:-$(packaging/build-release.sh | tail -n 1)}"
version="$("$binary" --version | awk '{print $2}')"
mapfile -d '' config < <(python3 packaging/image/dockerfile-config.py Dockerfile)
[ ${#config[@]} -gt 0 ] || { echo "build-image: no configuration read from the Dockerfile" >&2; exit 1; }

work="$(mktemp -d)"
container=""
cleanup() {
  [ -z "$container" ] || buildah rm "$container" >/dev/null 2>&1 || true
  buildah rmi "localhost/musiclib-root-$$" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "build-image: the root (mmdebstrap bookworm minbase, packaging/image/setup.sh)" >&2
image_root "$work/root.tar" \
  --customize-hook='copy-in packaging/image /tmp' \
  --customize-hook='chroot "$1" sh /tmp/image/setup.sh' \
  --customize-hook='rm -rf "$1/tmp/image"'
install -m 0755 --strip "$binary" "$work/musiclib"

echo "build-image: the image (buildah)" >&2
# Two layers, as the Dockerfile's image has: the root, then the binary (an upgrade of musiclib
# alone downloads only the second).
container="$(buildah from scratch)"
buildah add --quiet "$container" "$work/root.tar" / >&2
root_image="localhost/musiclib-root-$$"
buildah commit --quiet --rm --format oci "$container" "$root_image" >/dev/null
container="$(buildah from --pull=never "$root_image")"
buildah copy --quiet --chmod 0755 "$container" "$work/musiclib" /usr/bin/musiclib >&2
# (Not the health check: an OCI image has no field for one. compose.yaml and
# compose.scale-out.yaml carry it, and test-image.sh gives it to podman run.)
image_config=()
for ((i = 0; i < ${#config[@]}; i += 2)); do
  [[ "${config[i]}" == --healthcheck* ]] || image_config+=("${config[i]}" "${config[i + 1]}")
done
buildah config --label "org.opencontainers.image.version=$version" "${image_config[@]}" "$container" >&2
mkdir -p "$out"
archive="$out/musiclib-$version.oci.tar"
rm -f "$archive"
buildah commit --quiet --rm --format oci "$container" "oci-archive:$archive:musiclib:$version" >&2
container=""
buildah rmi "$root_image" >/dev/null
echo "$archive"
