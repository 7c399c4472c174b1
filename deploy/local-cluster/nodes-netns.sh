#!/usr/bin/env bash
# Nodes as network hosts (NODE_NETNS=1): node N is the network namespace dwnodeN, its veth eth0
# (10.10.0.N/24) on the host's bridge dwnodes (10.10.0.254, the control plane's address). Its
# containerd, kubelet and kube-proxy run in it (up.sh), so its pods' bridge, its Service rules
# and its conntrack table are its own, as on a real node.
#
#   nodes-netns.sh up N      namespaces, veths, bridge, routes and sysctls for nodes 1..N
#   nodes-netns.sh guard K   node K's egress guard (before any pod can start on it)
#   nodes-netns.sh down      remove every node namespace and the bridge (idempotent)
#
# Routes: the host reaches node K's pods through node K and ClusterIPs through node1 (whose
# kube-proxy masquerades traffic from outside the pod range, so replies come back the same way);
# a node reaches another node's pods through that node, and nothing else: no default route.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

up() {
  local nodes=$1 n m ns
  ip link add "$HOST_BRIDGE" type bridge 2>/dev/null || true
  ip addr replace "$CP_IP/24" dev "$HOST_BRIDGE"
  ip link set "$HOST_BRIDGE" up
  for n in $(seq 1 "$nodes"); do
    ns=$(node_netns "$n")
    ip netns add "$ns"
    ip link add "$(node_veth "$n")" type veth peer name eth0 netns "$ns"
    ip link set "$(node_veth "$n")" master "$HOST_BRIDGE" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(node_ip "$n")/24" dev eth0
    ip -n "$ns" link set eth0 up
    for m in $(seq 1 "$nodes"); do
      [ "$m" = "$n" ] || ip -n "$ns" route add "$(node_subnet "$m")" via "$(node_ip "$m")" dev eth0
    done
    # The node's own processes (kubelet probes, kube-proxy's health) reach Services through its
    # own rules; the route only gives the first lookup an interface.
    ip -n "$ns" route add "$SERVICE_CIDR" via "$CP_IP" dev eth0
    in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1
    # br_netfilter is per namespace: the node's pod bridge must pass through its own iptables
    # (hairpin to a Service on the same node).
    in_ns "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=1
    ip route replace "$(node_subnet "$n")" via "$(node_ip "$n")" dev "$HOST_BRIDGE"
  done
  ip route replace "$SERVICE_CIDR" via "$(node_ip 1)" dev "$HOST_BRIDGE"
  log "node namespaces up: $(for n in $(seq 1 "$nodes"); do printf '%s=%s ' "$(node_netns "$n")" "$(node_ip "$n")"; done)on bridge $HOST_BRIDGE ($CP_IP)"
}

in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }

# The host's guard sees what leaves the host; each node's sees what leaves the node: pod traffic
# only to the cluster's own ranges, through the node's pod bridge, its veth or lo.
guard() {
  local ns G=DRAINWATCH-EGRESS c; ns=$(node_netns "$1")
  in_ns "$ns" iptables -t mangle -N $G
  for c in "$SERVICE_CIDR" "$POD_CIDR" "$NODE_NET"; do
    in_ns "$ns" iptables -t mangle -A $G -s "$POD_CIDR" -d "$c" -j RETURN
  done
  in_ns "$ns" iptables -t mangle -A $G -s "$POD_CIDR" -o lo -j RETURN
  in_ns "$ns" iptables -t mangle -A $G -s "$POD_CIDR" -j DROP -m comment --comment "$GUARD_COMMENT: pod range leaving the cluster from node$1"
  in_ns "$ns" iptables -t mangle -I POSTROUTING 1 -j $G -m comment --comment "$GUARD_COMMENT"
}

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NETNS_PREFIX[0-9]"); do
    ip netns delete "$ns" 2>/dev/null || true
  done
  ip link show "$HOST_BRIDGE" >/dev/null 2>&1 && ip link delete "$HOST_BRIDGE"
  return 0
}

case ${1:-} in
  up) up "${2:?nodes}" ;;
  guard) guard "${2:?node}" ;;
  down) down ;;
  *) die "usage: $0 up N | guard K | down" ;;
esac
