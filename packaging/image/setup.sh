#!/bin/sh
# Makes a Debian root into musiclib's container image (but for the binary): installs the
# packages listed in `packages` beside this script without their recommends, makes the
# `musiclib` user (uid and gid 10001, the same on every host) and /data, the image's one
# volume, owned by it, and leaves no package lists or caches behind. Run as root inside the
# root: by the Dockerfile on debian:bookworm-slim and by packaging/build-image.sh on the root
# mmdebstrap makes, so both images come from this one script.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
install -m 0644 "$here/dpkg-slim.cfg" /etc/dpkg/dpkg.cfg.d/musiclib-slim
apt-get update -qq
# shellcheck disable=SC2046 # one package per line, no spaces
apt-get install -y -qq --no-install-recommends $(grep -v '^#' "$here/packages") >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt/* \
  /var/log/dpkg.log
# What dpkg-slim.cfg leaves out, also from the packages installed before it was in place
# (as the Debian images' own slimming does).
find /usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete
find /usr/share/doc -mindepth 1 -type d -empty -delete
rm -rf /usr/share/man/* /usr/share/info/* /usr/share/groff/* /usr/share/lintian/* \
  /usr/share/locale/*
groupadd --gid 10001 musiclib
useradd --uid 10001 --gid musiclib --home-dir /data --no-create-home \
  --shell /usr/sbin/nologin musiclib
install -d -o musiclib -g musiclib -m 0750 /data
