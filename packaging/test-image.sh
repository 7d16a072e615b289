#!/usr/bin/env bash
# Tests the container image the way its users run it, with podman (installed when missing):
#   - the embedded default (compose.yaml's service): a named volume on /data, the port
#     published, the first admin from the environment; the image's health check
#     (`musiclib healthcheck`, read from the Dockerfile) passes; the server runs as the
#     image's user, not root; the web player is served; sign in, upload a track, stream it
#     back byte for byte; then the container is stopped (SIGTERM through tini: a clean exit)
#     and removed, and a new one on the same volume finds the library intact: the same
#     track streams, the old session's token still signs in (the generated secrets are in
#     the volume), the account's password still works.
#   - with TEST_IMAGE_POSTGRES_URL, TEST_IMAGE_S3_ENDPOINT and TEST_IMAGE_S3_BUCKET (the test
#     command passes its own PostgreSQL and S3 server): scale-out as compose.scale-out.yaml
#     runs it, its musiclib environment read from that file (the database and store
#     addresses replaced): `migrate`, two `serve --no-worker` replicas and a `worker`; a
#     track uploaded through one replica is enriched by the worker and streams from the other.
# On these machines podman runs containers with runc and explicit limits below the host's:
# the default limits are refused.
#
#   packaging/test-image.sh target/packages/musiclib-VERSION.oci.tar
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. .ci/toolchain.sh
. packaging/lib.sh
archive="$(realpath "$1")"
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

fail() { echo "test-image: FAIL: $*" >&2; exit 1; }
step() { echo "test-image: $*" >&2; }
work="$(mktemp -d)"
run_id="musiclib-test-$$"
containers=()
cleanup() {
  for container in "${containers[@]}"; do podman rm -f -t 0 "$container" >/dev/null 2>&1 || true; done
  podman volume rm -f "$run_id" >/dev/null 2>&1 || true
  [ -z "${image:-}" ] || podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

image="$(load_image "$archive")" || fail "podman load"
step "loaded $image ($(podman image inspect "$image" --format '{{.Size}}') bytes)"
[ "$(podman image inspect "$image" --format '{{.Config.User}}')" = "10001:10001" ] || fail "the image's user"
# The health check, as the Dockerfile gives it (an OCI image has no field for it).
mapfile -d '' config < <(python3 packaging/image/dockerfile-config.py Dockerfile)
health=()
for ((i = 0; i < ${#config[@]}; i += 2)); do
  case "${config[i]}" in
    --healthcheck) health+=(--health-cmd "${config[i + 1]#CMD }") ;;
    --healthcheck-interval) health+=(--health-interval "${config[i + 1]}") ;;
    --healthcheck-retries) health+=(--health-retries "${config[i + 1]}") ;;
    --healthcheck-start-period) health+=(--health-start-period "${config[i + 1]}") ;;
    --healthcheck-timeout) health+=(--health-timeout "${config[i + 1]}") ;;
  esac
done
[ ${#health[@]} -gt 0 ] || fail "no HEALTHCHECK in the Dockerfile"

# The compose files against the image: its settings, health check, port, volume, and each
# command they run accepted by its binary.
python3 -c 'import yaml' 2>/dev/null || apt_install python3-yaml
version="$(podman image inspect "$image" --format '{{index .Config.Labels "org.opencontainers.image.version"}}')"
podman_run --rm "$image" config --template >"$work/template.toml" || fail "config --template in the image"
commands="$(python3 packaging/image/check-compose.py "$version" "$work/template.toml")" || fail "the compose files"
while read -r command; do
  mapfile -t words < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$command")
  podman_run --rm "$image" "${words[@]}" --help >/dev/null || fail "the image does not take: ${words[*]}"
done <<<"$commands"
step "compose.yaml and compose.scale-out.yaml agree with the image (musiclib:$version)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() { # BASE CONTAINER
  for _ in $(seq 1 240); do
    curl -fsS "$1/health" >/dev/null 2>&1 && return 0
    [ "$(podman inspect "$2" --format '{{.State.Running}}')" = true ] \
      || { podman logs "$2" >&2; fail "$2 stopped"; }
    sleep 0.5
  done
  podman logs "$2" >&2; fail "$2 never answered /health"
}
login() { # BASE PASSWORD
  curl -fsS "$1/api/v1/auth/login" -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$2\"}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}
upload() { # BASE TOKEN FILE → track id
  local status
  status="$(curl -sS -o "$work/upload.json" -w '%{http_code}' "$1/api/v1/tracks/upload" \
    -H "authorization: Bearer $2" -F "file=@$3;filename=Image Tone.wav")"
  [ "$status" = 201 ] || fail "upload: $status $(cat "$work/upload.json")"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/upload.json"
}
streams_the_same() { # BASE TOKEN ID FILE
  curl -fsS -o "$work/streamed" "$1/api/v1/stream/$3?quality=original" -H "authorization: Bearer $2" \
    || fail "stream of $3 from $1"
  cmp -s "$work/streamed" "$4" || fail "the stream of $3 from $1 differs from the upload"
}
tone_wav "$work/tone.wav"

# ---------------------------------------------------------------- the embedded default
port="$(free_port)"
base="http://127.0.0.1:$port"
password="image-test-password"
podman volume create "$run_id" >/dev/null
embedded() { # NAME
  containers+=("$1")
  podman_run -d --name "$1" -p "127.0.0.1:$port:8000" -v "$run_id:/data" \
    -e ADMIN_USERNAME=admin -e ADMIN_PASSWORD="$password" "${health[@]}" "$image" >/dev/null
  wait_healthy "$base" "$1"
}
step "the embedded default: a container on a new volume, port $port"
embedded "$run_id-1"
podman healthcheck run "$run_id-1" >/dev/null || fail "the image's health check"
[ "$(podman exec "$run_id-1" id -u)" = 10001 ] || fail "the server runs as $(podman exec "$run_id-1" id -u)"
page="$(curl -fsS "$base/")" || fail "no page at /"
grep -qi '<html' <<<"$page" || fail "no web player at /: $page"
token="$(login "$base" "$password")" || fail "sign-in"
id="$(upload "$base" "$token" "$work/tone.wav")"
streams_the_same "$base" "$token" "$id" "$work/tone.wav"
step "signed in, uploaded and streamed $id; health check passed; user 10001"

step "stopping it (SIGTERM), and a new container on the same volume"
podman stop -t 30 "$run_id-1" >/dev/null
code="$(podman inspect "$run_id-1" --format '{{.State.ExitCode}}')"
[ "$code" = 0 ] || { podman logs "$run_id-1" >&2; fail "stopped with exit code $code"; }
podman rm "$run_id-1" >/dev/null
embedded "$run_id-2"
curl -fsS "$base/api/v1/tracks/$id" -H "authorization: Bearer $token" >/dev/null \
  || fail "the token of before the restart is refused, or the track is gone"
streams_the_same "$base" "$token" "$id" "$work/tone.wav"
login "$base" "$password" >/dev/null || fail "sign-in after the restart"
step "the library is intact after the restart"
podman stop -t 30 "$run_id-2" >/dev/null

# ---------------------------------------------------------------- scale-out
if [ -n "${TEST_IMAGE_POSTGRES_URL:-}" ]; then
  step "scale-out: migrate, two serve replicas and a worker (compose.scale-out.yaml's environment)"
  # compose.scale-out.yaml's environment for musiclib, with the addresses of the test's own
  # database and store; the secrets and the admin's password made up here.
  python3 - compose.scale-out.yaml "$work/scale-out.env" <<'PY'
import os, re, sys
import yaml
# The environment compose gives serve-1 (anchors and merge keys resolved by the YAML parser).
environment = yaml.safe_load(open(sys.argv[1]))["services"]["serve-1"]["environment"]
values = {
    "POSTGRES_PASSWORD": "unused", "S3_SECRET_ACCESS_KEY": "unused",
    "JWT_SECRET": "scale-out-test-jwt-secret", "LEGACY_SECRET_KEY": "scale-out-test-legacy-key",
    "ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "image-test-password", "PUBLIC_URL": "",
}
overrides = {
    "DATABASE_URL": os.environ["TEST_IMAGE_POSTGRES_URL"],
    "S3_ENDPOINT": os.environ["TEST_IMAGE_S3_ENDPOINT"],
    "S3_BUCKET": os.environ["TEST_IMAGE_S3_BUCKET"],
    "S3_PREFIX": "image-test",
    "TRUSTED_PROXIES": "127.0.0.1",
}
def expand(value):
    return re.sub(r"\$\{(\w+)(?::[-?][^}]*)?\}", lambda m: values[m.group(1)], str(value))
environment = {name: expand(value) for name, value in environment.items()} | overrides
with open(sys.argv[2], "w") as out:
    out.writelines(f"{name}={value}\n" for name, value in environment.items())
PY
  grep -q '^STORAGE_BACKEND=s3$' "$work/scale-out.env" || fail "compose.scale-out.yaml's environment: $(cat "$work/scale-out.env")"
  scale() { # NAME ARGS...
    local name="$1"; shift
    containers+=("$name")
    podman_run --network host --env-file "$work/scale-out.env" --name "$name" "$@"
  }
  scale "$run_id-migrate" "$image" migrate >/dev/null || fail "migrate"
  ports=()
  for replica in 1 2; do
    ports+=("$(free_port)")
    scale "$run_id-serve-$replica" -d -e BIND_ADDRESS="127.0.0.1:${ports[-1]}" "${health[@]}" \
      "$image" serve --no-worker >/dev/null
  done
  scale "$run_id-worker" -d "$image" worker >/dev/null
  one="http://127.0.0.1:${ports[0]}" two="http://127.0.0.1:${ports[1]}"
  wait_healthy "$one" "$run_id-serve-1"
  wait_healthy "$two" "$run_id-serve-2"
  podman healthcheck run "$run_id-serve-2" >/dev/null || fail "the health check of a replica"
  token="$(login "$one" "$password")" || fail "sign-in on replica 1"
  id="$(upload "$one" "$token" "$work/tone.wav")"
  for _ in $(seq 1 360); do
    track="$(curl -fsS "$two/api/v1/tracks/$id" -H "authorization: Bearer $token")" || fail "track $id on replica 2"
    status="$(python3 -c 'import json,sys; t = json.loads(sys.argv[1]); print(t["metadata_status"], t["title"], t.get("metadata_error") or "")' "$track")"
    [ "${status%% *}" = pending ] || break
    sleep 0.5
  done
  [ "$status" = "enriched Image Tone " ] || { podman logs "$run_id-worker" >&2; fail "the worker did not enrich $id: $status"; }
  streams_the_same "$two" "$token" "$id" "$work/tone.wav"
  step "scale-out: uploaded on replica 1, enriched by the worker, streamed from replica 2"
fi
echo "test-image: ok ($(du -h "$archive" | cut -f1) archive)"
