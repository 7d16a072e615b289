# syntax=docker/dockerfile:1
# musiclib's container image: `docker build -t musiclib .`, or `docker compose up` (compose.yaml).
#
# packaging/build-image.sh builds the same image where no image registry can be reached: its
# root from Debian's packages (mmdebstrap), set up by the same packaging/image/setup.sh from
# the same list of packages, and its configuration (user, volume, port, environment, health
# check, entrypoint) read from this file's last stage. Keep that stage to the instructions
# it knows: FROM, COPY of packaging/image/ and of the binary, the one RUN of setup.sh, and
# ENV, LABEL, VOLUME, EXPOSE, USER, WORKDIR, HEALTHCHECK, ENTRYPOINT, CMD.

# ---- the binary, carrying the web player (packaging/build-release.sh)
FROM docker.io/library/node:22-bookworm-slim AS node
FROM docker.io/library/rust:1.95-bookworm AS build
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cp "$(packaging/build-release.sh | tail -n 1)" /musiclib

# ---- the image
FROM docker.io/library/debian:bookworm-slim
COPY packaging/image/ /tmp/image/
RUN sh /tmp/image/setup.sh && rm -rf /tmp/image
COPY --from=build /musiclib /usr/bin/musiclib
LABEL org.opencontainers.image.title="musiclib" \
      org.opencontainers.image.description="Self-hosted music library server (web player, /api/v1, Subsonic)"
# The embedded default: the SQLite file, the media and the generated secrets in /data.
# Every setting can be given the same way (docs/configuration.md); compose.scale-out.yaml
# sets DATABASE_URL and the S3 store for the scale-out deployment.
# (PATH as Debian's images set it, so that an image built without that base has it too.)
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DATA_DIR=/data \
    BIND_ADDRESS=0.0.0.0:8000
VOLUME ["/data"]
EXPOSE 8000/tcp
USER 10001:10001
WORKDIR /data
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["/usr/bin/musiclib", "healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/bin/musiclib"]
CMD ["serve"]
