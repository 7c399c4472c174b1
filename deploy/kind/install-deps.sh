#!/usr/bin/env bash
# What kind needs on this machine, installed when missing (idempotent):
#  - Debian packages: podman and buildah (kind's engine, the image builds), mmdebstrap (the node
#    image's Debian base), and podman's dnsname CNI plugin, so that node names resolve on kind's
#    network (kubeadm join dials <cluster>-control-plane:6443).
#  - /lib/modules: kind mounts it read-only into every node; this host boots without modules.
#  - kind $KIND_VERSION, built from the Go module proxy into the cache.
#  - podman's containers.conf for kind (lib.sh), and a `docker` that is podman: `kind load
#    docker-image` calls the docker CLI whatever the provider.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
# shellcheck source=../apt.sh
. "$(dirname "$0")/../apt.sh"
apt_ensure podman buildah catatonit fuse-overlayfs uidmap mmdebstrap golang-github-containernetworking-plugin-dnsname
[ -d /lib/modules ] || { mkdir -p /lib/modules; log "created /lib/modules (empty: kind mounts it into the nodes)"; }
mkdir -p "$KIND_BIN_DIR"
install -m 0644 "$KIND_SCRIPTS/containers.conf" "$CONTAINERS_CONF"
printf '#!/bin/sh\n# docker is podman: kind load docker-image calls the docker CLI.\nexec podman "$@"\n' > "$KIND_BIN_DIR/docker"
chmod 0755 "$KIND_BIN_DIR/docker"
if ! "$KIND_BIN_DIR/kind" version 2>/dev/null | grep -q "^kind $KIND_VERSION "; then
  log "go install sigs.k8s.io/kind@$KIND_VERSION"
  GOBIN=$KIND_BIN_DIR go install -trimpath "sigs.k8s.io/kind@$KIND_VERSION"
fi
log "kind deps ok: $("$KIND_BIN_DIR/kind" version)"
