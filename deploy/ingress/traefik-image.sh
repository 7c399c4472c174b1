#!/usr/bin/env bash
# `make traefik-image`: the Traefik binary (deploy/ingress/traefik-build.sh, cached) as an OCI
# image named like the upstream one, docker.io/library/traefik:$TRAEFIK_VERSION, written as an
# archive beside the project's images and imported into every node's containerd of the running
# local cluster. No registry: manifests that name it run with IfNotPresent.
#   NO_IMPORT=1   only the archive
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../local-cluster/lib.sh"
. "$HERE/versions.env"
need_root

IMAGE=docker.io/library/traefik:$TRAEFIK_VERSION
ARCHIVE=$IMAGES_DIR/traefik-$TRAEFIK_VERSION.oci.tar
BIN=$("$HERE/traefik-build.sh")
B=(buildah --root "$DRAINWATCH_K8S_CACHE/buildah/root" --runroot "$DRAINWATCH_K8S_CACHE/buildah/runroot" --storage-driver vfs)

fresh=1
for input in "$BIN" "$HERE/Dockerfile.traefik"; do
  [ -f "$ARCHIVE" ] && [ "$ARCHIVE" -nt "$input" ] || fresh=0
done
if [ "$fresh" = 1 ]; then
  log "up to date: $IMAGE ($ARCHIVE)"
else
  [ -e /var/lib/containers ] || trap 'rm -rf /var/lib/containers' EXIT
  mkdir -p "$IMAGES_DIR"
  ctx=$(mktemp -d)
  cp "$BIN" "$ctx/traefik"
  "${B[@]}" bud --quiet --format oci --timestamp 0 -f "$HERE/Dockerfile.traefik" -t "$IMAGE" "$ctx" >/dev/null
  rm -f "$ARCHIVE.tmp"
  "${B[@]}" push --quiet "$IMAGE" "oci-archive:$ARCHIVE.tmp:$IMAGE"
  "${B[@]}" rmi -f "$IMAGE" >/dev/null 2>&1 || true
  mv "$ARCHIVE.tmp" "$ARCHIVE"
  rm -rf "$ctx"
  log "built $IMAGE ($ARCHIVE, $(stat -c%s "$ARCHIVE") bytes)"
fi

if [ "${NO_IMPORT:-0}" = 1 ]; then
  exit 0
fi
imported=0
for n in $(seq 1 "$MAX_NODES"); do
  [ -S "$(node_sock "$n")" ] || continue
  ctr_node "$n" images import --platform linux/amd64 "$ARCHIVE" >/dev/null \
    || die "importing $ARCHIVE into node$n's containerd failed"
  ctr_node "$n" images ls -q | grep -xF "$IMAGE" >/dev/null || die "node$n: $IMAGE not present after import"
  imported=$((imported + 1))
done
[ "$imported" -gt 0 ] || die "no running node of the local cluster to import into (make cluster-up)"
log "imported into $imported node(s): $IMAGE"
