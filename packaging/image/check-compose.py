#!/usr/bin/env python3
"""Checks that compose.yaml and compose.scale-out.yaml agree with the image they run
(called by packaging/test-image.sh, which then runs each printed command with --help in the
image):

- every musiclib service runs the image `musiclib:VERSION` of this release, built from `.`;
- every variable in their environment is a setting the binary declares (the names
  `musiclib config --template` lists: a misspelt one would be ignored by the server);
- their health check is the Dockerfile's HEALTHCHECK, the port they publish its EXPOSE, and
  the embedded one keeps /data (its VOLUME) in a named volume;
- the scale-out file has PostgreSQL, S3 storage, two `serve --no-worker` replicas behind the
  proxy, a `worker`, and the same secrets on all of them.

Prints the command line of every musiclib service, one JSON array a line.

    check-compose.py VERSION SETTINGS_TEMPLATE_FILE
"""

import importlib.util
import json
import pathlib
import re
import sys

import yaml

root = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("dockerfile_config", root / "packaging/image/dockerfile-config.py")
dockerfile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dockerfile)


def fail(message):
    raise SystemExit(f"check-compose: {message}")


def main(version, template_path):
    declared = {
        match.group(1).upper()
        for match in re.finditer(r"^#? ?([a-z0-9_]+) = ", pathlib.Path(template_path).read_text(), re.M)
    }
    if len(declared) < 30:
        fail(f"only {len(declared)} settings read from {template_path}")
    stage = dockerfile.stages(root / "Dockerfile")[-1]
    health = next(args for name, args in stage if name == "HEALTHCHECK")
    health_command = json.loads(health[health.index("CMD") + 3:])
    exposed = [port.split("/")[0] for port in next(args for name, args in stage if name == "EXPOSE").split()]
    volume = json.loads(next(args for name, args in stage if name == "VOLUME"))

    commands = []
    files = {name: yaml.safe_load((root / name).read_text()) for name in ("compose.yaml", "compose.scale-out.yaml")}
    for name, compose in files.items():
        musiclib = {key: service for key, service in compose["services"].items() if str(service.get("image", "")).startswith("musiclib:")}
        if not musiclib:
            fail(f"{name}: no musiclib service")
        for key, service in musiclib.items():
            where = f"{name}: {key}"
            if service["image"] != f"musiclib:{version}" or service.get("build") != ".":
                fail(f"{where}: image {service['image']} (build {service.get('build')}), expected musiclib:{version} built from .")
            unknown = set(service.get("environment", {})) - declared
            if unknown:
                fail(f"{where}: not settings of musiclib: {sorted(unknown)}")
            check = service.get("healthcheck", {})
            if not check.get("disable") and check.get("test") != ["CMD", *health_command]:
                fail(f"{where}: health check {check.get('test')}, the Dockerfile's is {health_command}")
            for port in service.get("ports", []):
                if port.rsplit(":", 1)[-1] not in exposed:
                    fail(f"{where}: publishes {port}, the image exposes {exposed}")
            commands.append(service.get("command", ["serve"]))
    embedded = files["compose.yaml"]["services"]["musiclib"]
    if not any(mount.endswith(":" + volume[0]) and mount.split(":")[0] in files["compose.yaml"]["volumes"]
               for mount in embedded["volumes"]):
        fail(f"compose.yaml keeps {volume[0]} in no named volume: {embedded['volumes']}")

    services = files["compose.scale-out.yaml"]["services"]
    serves = [key for key, service in services.items() if service.get("command") == ["serve", "--no-worker"]]
    if len(serves) != 2:
        fail(f"compose.scale-out.yaml: {len(serves)} serve replicas")
    if ["worker"] not in [service.get("command") for service in services.values()]:
        fail("compose.scale-out.yaml: no worker")
    proxy = " ".join(services["proxy"]["command"])
    if not all(f"{key}:{exposed[0]}" in proxy for key in serves):
        fail(f"compose.scale-out.yaml: the proxy does not reach every replica: {proxy}")
    environments = [json.dumps(service["environment"], sort_keys=True) for service in services.values() if str(service.get("image", "")).startswith("musiclib:")]
    if len(set(environments)) != 1:
        fail("compose.scale-out.yaml: the musiclib services' environments differ")
    environment = services[serves[0]]["environment"]
    if not environment["DATABASE_URL"].startswith("postgres://") or environment["STORAGE_BACKEND"] != "s3":
        fail("compose.scale-out.yaml: not PostgreSQL and S3")
    for secret in ("JWT_SECRET", "LEGACY_SECRET_KEY"):
        if not environment.get(secret, "").startswith("${"):
            fail(f"compose.scale-out.yaml: {secret} is not set from the environment")
    for command in commands:
        print(json.dumps(command))


if __name__ == "__main__":
    main(*sys.argv[1:])
