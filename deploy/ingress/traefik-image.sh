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
. "$HERE/image-lib.sh"
need_root

IMAGE=docker.io/library/traefik:$TRAEFIK_VERSION
ARCHIVE=$IMAGES_DIR/traefik-$TRAEFIK_VERSION.oci.tar
BIN=$("$HERE/traefik-build.sh")
images_lock

if archive_fresh "$ARCHIVE" "$BIN" "$HERE/Dockerfile.traefik"; then
  log "up to date: $IMAGE ($ARCHIVE)"
else
  ctx=$(mktemp -d)
  cp "$BIN" "$ctx/traefik"
  build_archive "$IMAGE" "$ARCHIVE" "$HERE/Dockerfile.traefik" "$ctx"
  rm -rf "$ctx"
fi

[ "${NO_IMPORT:-0}" = 1 ] || import_archive "$IMAGE" "$ARCHIVE"
