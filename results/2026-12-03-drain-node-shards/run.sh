#!/usr/bin/env bash
# drain-node with client shards on a three-node testbed (nodes as network hosts): an attach run
# against the good example whose trigger drains the node of the pod under test, with two
# per-node client pods, which must go to the two other nodes.
#
#   results/2026-12-03-drain-node-shards/run.sh     (from the repository root, as root)
set -euo pipefail
here=results/2026-12-03-drain-node-shards
kc=/var/lib/drainwatch-cluster/admin.kubeconfig
kubectl=(/var/cache/drainwatch-k8s/v1.34.4/bin/kubectl --kubeconfig "$kc")
dw=${DRAINWATCH:-${CARGO_TARGET_DIR:-/var/cache/drainwatch/cargo-target}/debug/drainwatch}
export NODE_NETNS=1 NODES=3
make cluster-up
DRAINWATCH_IMAGE_PROFILE=test-image make example-images
"${kubectl[@]}" apply -f examples/k8s/namespace.yaml -f examples/k8s/good-shutdown.yaml
"${kubectl[@]}" -n drainwatch-examples rollout status deployment/good-shutdown --timeout 180s
rm -rf "$here/out"
cp /var/lib/drainwatch-cluster/cluster-info.json "$here/"
set +e
"$dw" run --target deployment/good-shutdown --target-namespace drainwatch-examples \
  --image ghcr.io/drainwatch/drainwatch:0.2.0-attach --trigger drain-node --clients 2 \
  --tcp-flows 4 --dial-rate 20 --kubeconfig "$kc" --out "$here/out" 2>&1 | tee "$here/run.log"
echo "exit ${PIPESTATUS[0]}" | tee -a "$here/run.log"
"${kubectl[@]}" get nodes -o wide >> "$here/run.log" 2>&1
