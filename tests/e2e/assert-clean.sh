#!/usr/bin/env bash
# Asserts that no trace of the local cluster is left on the machine (run after `make cluster-down`):
# no process of ours, no KUBE-/CNI-/DRAINWATCH- chain (iptables and ip6tables), no kube-proxy nft
# table, no cluster bridge, no pod or node netns, no mount under our directories, no node IP on lo, no
# cgroup of ours, no state/log/runtime directory. With a sysctl snapshot file (lines k=v, as
# written by bring-up to sysctl-before.txt) also checks that those sysctls are back.
# Prints each leftover; exits 1 if there is any.
set -uo pipefail
. "$(dirname "$0")/../../deploy/local-cluster/lib.sh"
left=()
# processes: running one of our binaries, a containerd/shim of ours, or anything in our cgroups
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  exe=$(readlink "$p/exe" 2>/dev/null) || continue
  case $exe in "$DRAINWATCH_K8S_CACHE"/*) left+=("process $pid $exe"); continue;; esac
  cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)
  # a containerd or shim serving our state (clients such as a stray ctr are not ours)
  case ${exe##*/} in containerd|containerd-shim*)
    case $cmd in *"$S/"*|*"$R/"*) left+=("process $pid: ${cmd:0:120}");; esac;; esac
  grep -q "/${CGROUP_PREFIX}node" "$p/cgroup" 2>/dev/null && left+=("process $pid in our cgroup: ${cmd:0:80}")
done
for ipt in iptables ip6tables; do
  for t in filter nat mangle raw; do
    for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^(KUBE-|CNI-|DRAINWATCH-)/ {print $2}'); do
      left+=("$ipt chain $t/$c")
    done
    "$ipt" -t "$t" -S 2>/dev/null | grep -iE 'drainwatch|KUBE-' >/dev/null && left+=("$ipt rule mentioning KUBE-/drainwatch in $t")
  done
done
for fam in ip ip6; do nft list table "$fam" kube-proxy >/dev/null 2>&1 && left+=("nft table $fam kube-proxy"); done
for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
  case $l in "$BRIDGE_PREFIX"*|cni[0-9]*|"$HOST_BRIDGE"|dwveth*) left+=("link $l");; esac
done
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do case $ns in cni-*|"$NETNS_PREFIX"[0-9]*) left+=("netns $ns");; esac; done
mapfile -t mounts < <(awk -v s="$S" -v r="$R" -v l="$L" \
  'index($2,s)==1 || index($2,r)==1 || index($2,l)==1 || $2 ~ /^\/run\/netns\/cni-/ {print "mount " $2}' /proc/self/mounts)
left+=("${mounts[@]}")
for a in $(ip -4 -o addr show dev lo | awk '{print $4}'); do
  case $a in "$NODE_IP_PREFIX"*) left+=("address $a on lo");; esac
done
for d in /sys/fs/cgroup/*/"$CGROUP_PREFIX"node*; do [ -e "$d" ] && left+=("cgroup $d"); done
for d in "$S" "$R" "$L"; do [ -e "$d" ] && left+=("directory $d"); done
for f in /var/lib/cni/results/"$CNI_NET_PREFIX"* /var/lib/cni/networks/"$CNI_NET_PREFIX"*; do [ -e "$f" ] && left+=("file $f"); done
if [ -n "${1:-}" ] && [ -f "$1" ]; then
  while IFS='=' read -r k v; do
    [ -n "$k" ] || continue
    now=$(sysctl -n "$k" 2>/dev/null)
    [ "$now" = "$v" ] || left+=("sysctl $k=$now (was $v)")
  done < "$1"
fi
if ((${#left[@]})); then
  printf 'left behind: %s\n' "${left[@]}"
  exit 1
fi
echo "clean: no process, chain, bridge, netns, mount, address, cgroup or directory of the local cluster"
