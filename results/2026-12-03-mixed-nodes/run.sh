#!/usr/bin/env bash
# One arm of the mixed-node experiment: the testbed's nodes as network hosts (NODE_NETNS=1), each
# with the kube-proxy settings the environment gives (KUBE_PROXY_MODE_NODEn,
# KUBE_PROXY_MIN_SYNC_PERIOD_NODEn), then an attach rollout restart of the good example with one
# client pod per node, three times. The example serves for DRAIN_DELAY=15 s after SIGTERM, longer
# than any min-sync-period tried, so a node's lag is its kube-proxy's and not cut short by the
# pod's exit. NODES (default 2) nodes, CLIENTS (default 2) client pods.
#
#   results/2026-12-03-mixed-nodes/run.sh ARM     (from the repository root, as root)
set -euo pipefail
arm=${1:?arm name}
here=results/2026-12-03-mixed-nodes
out=$here/$arm
kc=/var/lib/drainwatch-cluster/admin.kubeconfig
kubectl=(/var/cache/drainwatch-k8s/v1.34.4/bin/kubectl --kubeconfig "$kc")
dw=${DRAINWATCH:-${CARGO_TARGET_DIR:-/var/cache/drainwatch/cargo-target}/debug/drainwatch}
export NODE_NETNS=1
make cluster-up
DRAINWATCH_IMAGE_PROFILE=test-image make example-images
"${kubectl[@]}" apply -f examples/k8s/namespace.yaml -f examples/k8s/good-shutdown.yaml
"${kubectl[@]}" -n drainwatch-examples set env deployment/good-shutdown DRAIN_DELAY=15
"${kubectl[@]}" -n drainwatch-examples rollout status deployment/good-shutdown --timeout 180s
rm -rf "$out"
mkdir -p "$out"
cp /var/lib/drainwatch-cluster/cluster-info.json "$out/"
set +e
"$dw" run --target deployment/good-shutdown --target-namespace drainwatch-examples \
  --image ghcr.io/drainwatch/drainwatch:0.2.0-attach --trigger rollout-restart --clients "${CLIENTS:-2}" \
  --tcp-flows 4 --dial-rate 20 --repeat 3 --kubeconfig "$kc" --out "$out/out" 2>&1 | tee "$out/run.log"
echo "exit ${PIPESTATUS[0]}" | tee -a "$out/run.log"
