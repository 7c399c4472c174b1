#!/usr/bin/env bash
# `make envoy-gateway-image`: Envoy Gateway (deploy/ingress/envoy-gateway-build.sh) and Envoy
# (deploy/ingress/envoy-fetch.sh) as OCI images named like the upstream ones,
#   docker.io/envoyproxy/gateway:$ENVOY_GATEWAY_VERSION
#   docker.io/envoyproxy/envoy:v$ENVOY_VERSION
# written as archives beside the project's images and imported into every node's containerd of
# the running local cluster. No registry: manifests that name them run with IfNotPresent.
#   NO_IMPORT=1   only the archives
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../local-cluster/lib.sh"
. "$HERE/versions.env"
. "$HERE/image-lib.sh"
need_root

GW_IMAGE=docker.io/envoyproxy/gateway:$ENVOY_GATEWAY_VERSION
GW_ARCHIVE=$IMAGES_DIR/envoy-gateway-$ENVOY_GATEWAY_VERSION.oci.tar
ENVOY_IMAGE=docker.io/envoyproxy/envoy:v$ENVOY_VERSION
ENVOY_ARCHIVE=$IMAGES_DIR/envoy-$ENVOY_VERSION.oci.tar
GW_BIN=$("$HERE/envoy-gateway-build.sh")
ENVOY_BIN=$("$HERE/envoy-fetch.sh")
images_lock

# glibc_rootfs DIR: the shared objects `ldd` resolves for Envoy, copied to the same paths under
# DIR (symlinks followed: the image holds the files, named as the loader asks for them).
glibc_rootfs() {
  local dir=$1 lib
  for lib in $(ldd "$ENVOY_BIN" | grep -o '/[^ ]*'); do
    mkdir -p "$dir$(dirname "$lib")"
    cp -L "$lib" "$dir$lib"
  done
  [ -e "$dir/lib64/ld-linux-x86-64.so.2" ] || die "ldd named no loader for $ENVOY_BIN"
}

if archive_fresh "$GW_ARCHIVE" "$GW_BIN" "$HERE/Dockerfile.envoy-gateway"; then
  log "up to date: $GW_IMAGE ($GW_ARCHIVE)"
else
  ctx=$(mktemp -d)
  cp "$GW_BIN" "$ctx/envoy-gateway"
  build_archive "$GW_IMAGE" "$GW_ARCHIVE" "$HERE/Dockerfile.envoy-gateway" "$ctx"
  rm -rf "$ctx"
fi

if archive_fresh "$ENVOY_ARCHIVE" "$ENVOY_BIN" "$HERE/Dockerfile.envoy" "$0"; then
  log "up to date: $ENVOY_IMAGE ($ENVOY_ARCHIVE)"
else
  ctx=$(mktemp -d)
  cp "$ENVOY_BIN" "$ctx/envoy"
  glibc_rootfs "$ctx/rootfs"
  build_archive "$ENVOY_IMAGE" "$ENVOY_ARCHIVE" "$HERE/Dockerfile.envoy" "$ctx"
  rm -rf "$ctx"
fi

if [ "${NO_IMPORT:-0}" != 1 ]; then
  import_archive "$GW_IMAGE" "$GW_ARCHIVE"
  import_archive "$ENVOY_IMAGE" "$ENVOY_ARCHIVE"
fi
