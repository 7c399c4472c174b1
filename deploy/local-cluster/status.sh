#!/usr/bin/env bash
# `make cluster-status`: components (recorded PID alive + health endpoint), nodes, pods.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
if [ ! -f "$S/nodes" ]; then echo "no local cluster (state dir $S absent)"; exit 1; fi
NODES=$(cat "$S/nodes")
rc=0
check() { # name url [curl opts]; IN_NODE=N curls from node N's network
  local name=$1 url=$2; shift 2
  local p="-" st="DOWN" h="-"
  alive "$name" && { p=$(pid_of "$name"); st=running; }
  if [ -n "$url" ]; then
    local -a from=()
    [ -n "${IN_NODE:-}" ] && from=(in_node "$IN_NODE")
    if "${from[@]}" curl -fsS --max-time 2 "$@" "$url" >/dev/null 2>&1; then h=ok; else h=FAIL; fi
  fi
  [ "$st" = running ] && [ "$h" != FAIL ] || rc=1
  printf '  %-26s %-8s pid %-8s health %s\n' "$name" "$st" "$p" "$h"
}
CERT=(--cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")
echo "components ($NODES node(s); state $S, logs $L):"
check etcd http://127.0.0.1:2379/readyz
check kube-apiserver "https://$(api_ip):$APISERVER_PORT/readyz" "${CERT[@]}"
check kube-controller-manager https://127.0.0.1:10257/healthz -k
check kube-scheduler https://127.0.0.1:10259/healthz -k
netns_mode || check kube-proxy http://127.0.0.1:10256/healthz
for n in $(seq 1 "$NODES"); do
  check "containerd-node$n" ""
  check "kubelet-node$n" "http://$(node_ip "$n"):10248/healthz"
  if netns_mode; then IN_NODE=$n check "kube-proxy-node$n" http://127.0.0.1:10256/healthz; fi
done
netns_mode && echo "nodes are network hosts: $(ip netns list | awk '{print $1}' | grep "^$NETNS_PREFIX" | sort | tr '\n' ' ')on bridge $HOST_BRIDGE ($CP_IP); kube-proxies: $(cat "$S/proxies")"
G=DRAINWATCH-EGRESS
if iptables -t mangle -S POSTROUTING 2>/dev/null | grep -- "-j $G" >/dev/null; then
  echo "egress guard: installed (mangle POSTROUTING -> $G); packets dropped so far:"
  iptables -t mangle -L $G -nvx 2>/dev/null | awk '$3=="DROP"{c=$0; sub(/.*\/\* /,"",c); sub(/ \*\/.*/,"",c); printf "    %6d packets  %s\n", $1, c}'
else echo "egress guard: MISSING"; rc=1; fi
echo
echo "admin kubeconfig: $ADMIN_KUBECONFIG"
if [ -x "$K8S_BIN/kubectl" ]; then
  kc get nodes -o wide 2>&1 || rc=1
  echo
  kc get pods -A -o wide 2>&1
fi
exit $rc
