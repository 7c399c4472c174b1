#!/usr/bin/env bash
# `make cluster-down`: stops every component of the local cluster by its recorded PID (never by
# name) and removes everything bring-up added: containers and their shims, mounts, network
# namespaces (the nodes' too), bridges, node IPs, cgroups, kube-proxy's and kubelet's iptables chains, the egress
# guard, CNI state, sysctl changes and the state, log and runtime directories.
# Idempotent; exits 0 on a clean machine and after a crash (kill -9) of any component.
#   KEEP_LOGS=1  keep $DRAINWATCH_CLUSTER_LOG (for post-mortems)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_root
cluster_lock
T0=$(date +%s.%N)

# ---- processes -----------------------------------------------------------------------------
# stop [-KILL] NAME...: SIGTERM (or SIGKILL) to each recorded PID that is still ours, wait up to
# 5 s for it to go, then SIGKILL.
stop() {
  local sig=TERM n pids=() pid
  [ "$1" = -KILL ] && { sig=KILL; shift; }
  for n in "$@"; do
    if alive "$n"; then pid=$(pid_of "$n"); kill -"$sig" "$pid" 2>/dev/null && pids+=("$pid"); fi
  done
  local deadline=$(( $(date +%s%N) + 5000000000 ))
  for pid in "${pids[@]}"; do
    while [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] \
          && [ "$(date +%s%N)" -lt "$deadline" ]; do sleep 0.05; done
    [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
  done
  for n in "$@"; do rm -f "$PIDS/$n" "$PIDS/$n.exe" "$PIDS/$n.netns"; done
}
nodes=""
for n in $(seq 1 "$MAX_NODES"); do nodes="$nodes $n"; done

did=0
[ -d "$S" ] || [ -d "$R" ] && did=1
[ "$did" = 1 ] && log "tearing down the local cluster ($S)"

# 1. stop whatever could (re)create pods or rules first
stop kube-proxy $(for n in $nodes; do echo "kube-proxy-node$n kubelet-node$n"; done) kube-scheduler kube-controller-manager

[ "$did" = 1 ] && log "control-plane clients stopped"
# 2. containers: through each containerd that still answers, then every shim and container
#    process it recorded (shim.pid / init.pid in its state dir), so a kill -9'd containerd leaves
#    nothing behind either.
for n in $nodes; do
  sock=$(node_sock "$n")
  if [ -S "$sock" ] && alive "containerd-node$n" && timeout 3 ctr --address "$sock" version >/dev/null 2>&1; then
    C="timeout 10 ctr --address $sock -n k8s.io"
    tasks=$($C tasks ls -q 2>/dev/null)
    for t in $tasks; do $C tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
    for t in $tasks; do $C tasks rm -f "$t" >/dev/null 2>&1; done
    for c in $($C containers ls -q 2>/dev/null); do $C containers rm "$c" >/dev/null 2>&1; done
  fi
done
stop $(for n in $nodes; do echo "containerd-node$n"; done)
# Containers and shims that outlived their containerd (kill -9): each container's init.pid is in
# our state dir and its shim is its parent; a shim whose container is already gone is found by its
# command line, which names our containerd's socket under $R (our path, not a program name).
our_shim() { # pid
  local exe cmd
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  case ${exe##*/} in containerd-shim*) ;; *) return 1;; esac
  cmd=$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null)
  case $cmd in *"-address $R/containerd-node"*) return 0;; esac
  return 1
}
kill_recorded() {
  local f pid ppid p
  for f in $(find "$R" -name init.pid 2>/dev/null); do
    pid=$(cat "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || continue
    ppid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
    [ -n "$ppid" ] && our_shim "$ppid" && kill -KILL "$ppid" 2>/dev/null
    grep -q "/${CGROUP_PREFIX}node" "/proc/$pid/cgroup" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  done
  for p in /proc/[0-9]*; do
    our_shim "${p#/proc/}" && kill -KILL "${p#/proc/}" 2>/dev/null
  done
}
kill_recorded
# anything left in our cgroup trees (container processes whose shim is gone)
for n in $nodes; do
  for h in /sys/fs/cgroup/*/; do
    d="$h${CGROUP_PREFIX}node$n"; [ -d "$d" ] || continue
    find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null
    done
  done
done
[ "$did" = 1 ] && log "containers and containerds stopped"
# all cluster state is deleted below, so a graceful apiserver/etcd shutdown (~5 s) buys nothing
stop -KILL kube-apiserver etcd
[ "$did" = 1 ] && log "apiserver and etcd stopped"

# ---- mounts, network namespaces ---------------------------------------------------------------
unmount_under() { # mounts under our directories, deepest first
  local pat m i
  for i in 1 2 3; do
    m=$(awk -v s="$S/" -v r="$R/" -v l="$L/" '
        index($2, s)==1 || index($2, r)==1 || index($2, l)==1 || $2==substr(s,1,length(s)-1) || $2==substr(r,1,length(r)-1) {print $2}' /proc/self/mounts | sort -r)
    [ -n "$m" ] || return 0
    for pat in $m; do umount "$pat" 2>/dev/null || umount -l "$pat" 2>/dev/null; done
  done
}
unmount_under
before_netns=""
[ -f "$S/host-before.txt" ] && before_netns=$(awk '$1=="netns"{print $2}' "$S/host-before.txt")
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cni-'); do
  # the CNI netns containerd created for our pods (any that did not exist before bring-up)
  grep -qxF "$ns" <<<"$before_netns" || ip netns delete "$ns" 2>/dev/null
done

# ---- network ---------------------------------------------------------------------------------
# Nodes as hosts: each node's namespace takes its pod bridge, its rules and its conntrack table.
"$LC_DIR/nodes-netns.sh" down
for n in $nodes; do
  ip link show "$(node_bridge "$n")" >/dev/null 2>&1 && ip link delete "$(node_bridge "$n")"
  ip addr del "$(node_ip "$n")/32" dev lo 2>/dev/null
done
# kube-proxy's own cleanup (iptables, ipvs, nftables), then every KUBE-/CNI- chain that remains:
# kubelet's KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT, portmap's CNI-HOSTPORT-*, ...
[ -x "$K8S_BIN/kube-proxy" ] && timeout 20 "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1
sweep_chains() { # iptables|ip6tables
  local ipt=$1 t c r
  for t in filter nat mangle raw; do
    "$ipt" -t "$t" -S >/dev/null 2>&1 || continue
    # rules in built-in chains that jump to our chains
    "$ipt" -t "$t" -S 2>/dev/null | grep -E -- '^-A [A-Z]+ .*-j (KUBE-|CNI-|DRAINWATCH-)' | sed 's/^-A/-D/' \
      | while read -r r; do eval "$ipt -t $t $r" 2>/dev/null; done
    for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^(KUBE-|CNI-|DRAINWATCH-)/ {print $2}'); do
      "$ipt" -t "$t" -F "$c" 2>/dev/null
    done
    for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^(KUBE-|CNI-|DRAINWATCH-)/ {print $2}'); do
      "$ipt" -t "$t" -X "$c" 2>/dev/null
    done
  done
}
[ "$did" = 1 ] && log "kube-proxy --cleanup done"
sweep_chains iptables
sweep_chains ip6tables
# nftables tables kube-proxy may have created (iptables-nft's own tables stay)
for fam in ip ip6; do nft delete table "$fam" kube-proxy 2>/dev/null; done
# conntrack entries of the cluster's ranges
if command -v conntrack >/dev/null; then
  for c in "$SERVICE_CIDR" "$POD_CIDR" "$NODE_NET"; do
    conntrack -D -d "$c" >/dev/null 2>&1; conntrack -D -s "$c" >/dev/null 2>&1
  done
fi

# ---- cgroups (depth-first) ---------------------------------------------------------------------
for n in $nodes; do
  for h in /sys/fs/cgroup/*/; do
    d="$h${CGROUP_PREFIX}node$n"; [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
done

# ---- sysctls back to what they were ------------------------------------------------------------
if [ -f "$S/sysctl-before.txt" ]; then
  while IFS='=' read -r k v; do [ -n "$k" ] && sysctl -qw "$k=$v" 2>/dev/null; done < "$S/sysctl-before.txt"
fi

# ---- files ---------------------------------------------------------------------------------------
# Paths some component hard-codes outside our directories. What did not exist before bring-up is
# removed whole; what did (or when the record is lost) loses only our files.
before=""
[ -f "$S/host-before.txt" ] && before=$(awk '$1=="path"{print $2}' "$S/host-before.txt")
ours() { [ -f "$S/host-before.txt" ] && ! grep -qxF "$1" <<<"$before"; }
# CNI result cache (libcni, used by containerd): our networks and the loopback entries of our sandboxes
if ours /var/lib/cni; then rm -rf /var/lib/cni
elif [ -d /var/lib/cni/results ]; then
  for f in /var/lib/cni/results/"$CNI_NET_PREFIX"*; do
    [ -e "$f" ] || continue
    id=${f#*/"$CNI_NET_PREFIX"[0-9]-}; id=${id%-eth0}
    rm -f "$f" /var/lib/cni/results/cni-loopback-"$id"-lo
  done
fi
# kubelet: the device-plugin socket dir is hard-coded to /var/lib/kubelet/device-plugins
if ours /var/lib/kubelet; then rm -rf /var/lib/kubelet
else
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint 2>/dev/null
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null
fi
# kubelet's symlinks into our pod log dirs
for f in /var/log/containers/*; do
  [ -L "$f" ] && case $(readlink "$f") in "$L"/*) rm -f "$f";; esac
done
ours /var/log/containers && rmdir /var/log/containers 2>/dev/null
ours /var/log/pods && rmdir /var/log/pods 2>/dev/null
# containerd shims put their sockets in /run/containerd/s (hard-coded); all our shims are dead now
ours /run/containerd && rm -rf /run/containerd
ours /run/netns && rmdir /run/netns 2>/dev/null
unmount_under
if [ "${KEEP_LOGS:-0}" = 1 ]; then rm -rf "$S" "$R"; else rm -rf "$S" "$R" "$L"; fi

if [ "$did" = 1 ]; then log "local cluster down"; else log "nothing to tear down (no cluster state); cleaned stray leftovers if any"; fi
exit 0
