#!/usr/bin/env bash
# `make kind-down`: deletes the kind cluster and its kubeconfig; the node image and the build
# caches stay (the next `make kind-up` takes seconds).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
kind_lock
if command -v kind >/dev/null && kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; then
  kind delete cluster --name "$KIND_CLUSTER_NAME"
fi
rm -f "$KIND_KUBECONFIG"
log "kind cluster $KIND_CLUSTER_NAME: down"
