# drainwatch image: the static musl binary and nothing else.
#
# The binary is prebuilt (no Rust base image is reachable from our machines) and taken from the
# build context: `make image` builds it with
#   cargo build --release --target x86_64-unknown-linux-musl
# puts it into a context directory as ./drainwatch with rootfs/ (scripts/image-context.sh) and
# runs buildah (or docker) on this file.
# By hand:
#   scripts/image-context.sh /tmp/ctx "$CARGO_TARGET_DIR/x86_64-unknown-linux-musl/release/drainwatch"
#   buildah bud --storage-driver vfs -f Dockerfile -t ghcr.io/drainwatch/drainwatch:<version> /tmp/ctx
FROM scratch

ARG VERSION=unknown
ARG REVISION=unknown
ARG SOURCE=https://github.com/drainwatch/action
ARG LICENSES=MIT
ARG CREATED=1970-01-01T00:00:00Z

LABEL org.opencontainers.image.title="drainwatch" \
      org.opencontainers.image.description="Probe server and measurement tool for what a pod's connections go through on termination" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="${LICENSES}" \
      org.opencontainers.image.created="${CREATED}"

COPY drainwatch /drainwatch
# The restore journal's state dir (what `drainwatch cleanup` replays after a killed run): a
# scratch image has no writable HOME or /tmp, and the container runs as 65532 or any --user, so
# it is world-writable and sticky like /tmp (scripts/image-context.sh makes rootfs/; COPY keeps a
# copied directory's mode). It lives in the container's writable layer.
COPY rootfs/ /
ENV DRAINWATCH_STATE_DIR=/var/lib/drainwatch

# probe: TCP heartbeat stream, UDP echo, HTTP /readyz and /healthz
EXPOSE 7001/tcp 7002/udp 7003/tcp

# non-root, numeric (there is no /etc/passwd in a scratch image)
USER 65532:65532
ENTRYPOINT ["/drainwatch"]
CMD ["probe"]
