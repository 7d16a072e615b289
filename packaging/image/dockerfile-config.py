#!/usr/bin/env python3
"""Reads the last stage of musiclib's Dockerfile and prints the `buildah config` options that
give an image the same configuration (environment, labels, volume, port, user, working
directory, health check, entrypoint, command), NUL-separated, for packaging/build-image.sh.

It refuses an instruction it does not know how to carry over (any RUN but the one of
packaging/image/setup.sh, a COPY of anything but that folder and the binary, ARG, ADD,
SHELL, ...): the script and the Dockerfile then describe the same image or the build stops.

    dockerfile-config.py Dockerfile
"""

import json
import shlex
import sys

KNOWN_COPIES = {
    ("packaging/image/", "/tmp/image/"),
    ("--from=build", "/musiclib", "/usr/bin/musiclib"),
}
KNOWN_RUN = "sh /tmp/image/setup.sh && rm -rf /tmp/image"


def instructions(text):
    """(NAME, arguments) of each instruction, continuation lines joined, comments dropped."""
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not logical and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        logical += stripped
        name, _, rest = logical.partition(" ")
        yield name.upper(), rest.strip()
        logical = ""


def pairs(arguments):
    """KEY=VALUE pairs, values quoted as a shell would."""
    for word in shlex.split(arguments):
        key, sep, value = word.partition("=")
        if not sep:
            raise SystemExit(f"dockerfile-config: expected KEY=VALUE, got {word!r}")
        yield key, value


def stages(path):
    """The instructions of each stage (a first empty one for those before any FROM)."""
    with open(path, encoding="utf-8") as file:
        found = [[]]
        for name, arguments in instructions(file.read()):
            if name == "FROM":
                found.append([])
            found[-1].append((name, arguments))
    return found


def main(path):
    options = []
    for name, arguments in stages(path)[-1]:
        if name == "COPY":
            if tuple(arguments.split()) not in KNOWN_COPIES:
                raise SystemExit(f"dockerfile-config: build-image.sh cannot do COPY {arguments}")
        elif name == "RUN":
            if arguments != KNOWN_RUN:
                raise SystemExit(f"dockerfile-config: build-image.sh cannot do RUN {arguments}")
        elif name == "ENV":
            options += [x for key, value in pairs(arguments) for x in ("--env", f"{key}={value}")]
        elif name == "LABEL":
            options += [x for key, value in pairs(arguments) for x in ("--label", f"{key}={value}")]
        elif name == "VOLUME":
            options += [x for volume in json.loads(arguments) for x in ("--volume", volume)]
        elif name == "EXPOSE":
            options += [x for port in arguments.split() for x in ("--port", port)]
        elif name == "USER":
            options += ["--user", arguments]
        elif name == "WORKDIR":
            options += ["--workingdir", arguments]
        elif name == "ENTRYPOINT":
            options += ["--entrypoint", json.dumps(json.loads(arguments))]
        elif name == "CMD":
            options += ["--cmd", json.dumps(json.loads(arguments))]
        elif name == "HEALTHCHECK":
            words = arguments.split()
            flags = {}
            while words and words[0].startswith("--"):
                key, _, value = words.pop(0)[2:].partition("=")
                flags[key] = value
            if not words or words[0] != "CMD":
                raise SystemExit(f"dockerfile-config: HEALTHCHECK {arguments}: expected CMD [...]")
            command = json.loads(" ".join(words[1:]))
            if any(" " in word for word in command):
                raise SystemExit("dockerfile-config: HEALTHCHECK CMD words must not hold spaces")
            options += ["--healthcheck", " ".join(["CMD", *command])]
            for key in ("interval", "timeout", "start-period", "retries"):
                if key in flags:
                    options += [f"--healthcheck-{key}", flags[key]]
        elif name != "FROM":
            raise SystemExit(f"dockerfile-config: build-image.sh cannot do {name} {arguments}")
    sys.stdout.write("".join(option + "\0" for option in options))


if __name__ == "__main__":
    main(sys.argv[1])
