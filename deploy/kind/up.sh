#!/usr/bin/env bash
# `make kind-up`: a kind cluster on this machine, podman as its engine, from a node image built
# here (build-node-image.sh), created by the Action's own setup/kind.sh: a control plane and
# $KIND_WORKERS workers, flannel as its CNI, pods in $KIND_POD_SUBNET. Then checked: every node
# Ready, CoreDNS and flannel ready, a pod on a worker reaches a pod on the control plane.
# Prints the kubeconfig's path. A cluster already up and healthy is kept (seconds).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
"$KIND_SCRIPTS/install-deps.sh"
"$REPO_ROOT/deploy/local-cluster/build.sh"
"$REPO_ROOT/deploy/local-cluster/mkpause.sh"
"$KIND_SCRIPTS/build-node-image.sh"
kind_lock

healthy() {
  kindctl --request-timeout=10s get --raw /readyz >/dev/null 2>&1 &&
    [ "$(kindctl get nodes --no-headers 2>/dev/null | grep -cw Ready)" = $((KIND_WORKERS + 1)) ]
}
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; then
  if [ "$(podman inspect --format '{{.ImageName}}' "$KIND_CLUSTER_NAME-control-plane" 2>/dev/null)" = "$KIND_NODE_IMAGE" ] &&
    [ "$(podman inspect --format '{{.Image}}' "$KIND_CLUSTER_NAME-control-plane" 2>/dev/null)" = "$(podman image inspect --format '{{.Id}}' "$KIND_NODE_IMAGE")" ] && healthy; then
    log "kind cluster $KIND_CLUSTER_NAME: up (kubeconfig $KIND_KUBECONFIG)"
    exit 0
  fi
  log "kind cluster $KIND_CLUSTER_NAME: stale or unhealthy, recreating"
  kind delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || true
fi

t=$(date +%s)
# fd 8 (the lock) closed for kind: the node containers' conmon would inherit it and hold the
# lock for as long as the cluster runs (make kind-down would wait on it forever)
DRAINWATCH_KIND_NAME=$KIND_CLUSTER_NAME DRAINWATCH_KIND_WORKERS=$KIND_WORKERS \
  DRAINWATCH_KIND_NODE_IMAGE=$KIND_NODE_IMAGE DRAINWATCH_KIND_POD_SUBNET=$KIND_POD_SUBNET \
  DRAINWATCH_KIND_SERVICE_SUBNET=$KIND_SERVICE_SUBNET DRAINWATCH_KIND_KUBECONFIG=$KIND_KUBECONFIG \
  "$REPO_ROOT/setup/kind.sh" create 8>&-
log "kind create cluster: $(( $(date +%s) - t ))s"

# --- checks -----------------------------------------------------------------------------------
kindctl wait --for=condition=Ready node --all --timeout=120s >/dev/null || die "nodes not Ready: kindctl get nodes"
kindctl -n kube-flannel rollout status daemonset/kube-flannel-ds --timeout=120s >/dev/null \
  || die "flannel not ready: kubectl --kubeconfig $KIND_KUBECONFIG -n kube-flannel logs ds/kube-flannel-ds"
kindctl -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null \
  || die "CoreDNS not ready: kubectl --kubeconfig $KIND_KUBECONFIG -n kube-system get pods"
# Across nodes: a pod on the worker reads CoreDNS's health endpoint on a pod of another node
# (bash's /dev/tcp: the tools image has no curl), and the API server through its Service.
dns_ip=$(kindctl -n kube-system get pod -l k8s-app=kube-dns -o jsonpath='{.items[0].status.podIP}')
dns_node=$(kindctl -n kube-system get pod -l k8s-app=kube-dns -o jsonpath='{.items[0].spec.nodeName}')
other=$(kindctl get nodes -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | grep -vx "$dns_node" | head -1)
kindctl delete pod kind-up-check --ignore-not-found --wait=true >/dev/null
kindctl run kind-up-check --image="localhost/drainwatch/kind-tools:$DEBIAN_SUITE" --image-pull-policy=Never --restart=Never \
  --overrides="{\"spec\":{\"nodeName\":\"$other\"}}" --command -- bash -c \
  "exec 3<>/dev/tcp/$dns_ip/8080 && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && grep -q OK <&3 && exec 4<>/dev/tcp/kubernetes.default.svc.cluster.local/443 && echo ok" >/dev/null
for _ in $(seq 60); do
  phase=$(kindctl get pod kind-up-check -o jsonpath='{.status.phase}' 2>/dev/null || true)
  case "$phase" in Succeeded | Failed) break ;; esac
  sleep 1
done
[ "$phase" = Succeeded ] || die "a pod on $other did not reach CoreDNS ($dns_ip on $dns_node) and the API Service: phase ${phase:-none}; kubectl --kubeconfig $KIND_KUBECONFIG logs kind-up-check"
kindctl delete pod kind-up-check --wait=false >/dev/null
log "kind cluster $KIND_CLUSTER_NAME up: $(kindctl get nodes --no-headers | wc -l) nodes, pods across nodes reach each other; kubeconfig $KIND_KUBECONFIG"
