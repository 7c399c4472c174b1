#!/usr/bin/env bash
# Scale with a longer interval: two client pods (one per node, nodes as network hosts) sharing
# FLOWS TCP + FLOWS UDP flows against one probe pod, pinging every INTERVAL (the probe heartbeats
# at the same interval), trigger delete. A sampler reads every drainwatch pod's cgroup (client
# shards and the probe: cpuacct.usage, memory.usage_in_bytes, memory.max_usage_in_bytes, cgroup v1
# under the node's kubelet cgroup root) and the machine's busy CPU (/proc/stat) once a second into
# samples.tsv; summary.txt is CPU and peak memory per 1,000 flows per pod.
#
#   FLOWS=18000 INTERVAL=2s results/2026-12-03-shards-scale-interval/run.sh   (repository root, root)
set -euo pipefail
flows=${FLOWS:-18000}
interval=${INTERVAL:-2s}
here=results/2026-12-03-shards-scale-interval/$flows-$interval
kc=/var/lib/drainwatch-cluster/admin.kubeconfig
kubectl=(/var/cache/drainwatch-k8s/v1.34.4/bin/kubectl --kubeconfig "$kc")
dw=${DRAINWATCH:-${CARGO_TARGET_DIR:-/var/cache/drainwatch/cargo-target}/release/drainwatch}
export NODE_NETNS=1 NODES=2
make cluster-up
rm -rf "$here"
mkdir -p "$here"
cp /var/lib/drainwatch-cluster/cluster-info.json "$here/"
# busy (user nice system irq softirq steal), softirq (the kernel's packet path) and all jiffies
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $8, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
sample() {
  printf 't_s\tpod\tnode\tcpu_ns\tmem_bytes\tmem_max_bytes\n'
  local t0 b0 s0 a0 b1 s1 a1; t0=$(date +%s.%N); read -r b0 s0 a0 < <(busy)
  while :; do
    local t; t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    read -r b1 s1 a1 < <(busy)
    # The machine's busy and softirq shares since the last sample (per mille), as a pseudo-pod.
    printf '%s\tmachine\t-\t%s\t%s\t0\n' "$t" \
      "$(awk -v b="$((b1 - b0))" -v a="$((a1 - a0))" 'BEGIN{printf "%d", a ? b * 1000 / a : 0}')" \
      "$(awk -v b="$((s1 - s0))" -v a="$((a1 - a0))" 'BEGIN{printf "%d", a ? b * 1000 / a : 0}')"
    b0=$b1; s0=$s1; a0=$a1
    "${kubectl[@]}" get pods -A -l 'app.kubernetes.io/name in (drainwatch-client,drainwatch-probe)' \
      -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.spec.nodeName}{"\n"}{end}' 2>/dev/null |
    while read -r name uid node; do
      [ -n "$uid" ] || continue
      cpu=$(find /sys/fs/cgroup/cpuacct/drainwatch-node*/kubepods -maxdepth 2 -type d -name "pod$uid" 2>/dev/null | head -1)
      mem=$(find /sys/fs/cgroup/memory/drainwatch-node*/kubepods -maxdepth 2 -type d -name "pod$uid" 2>/dev/null | head -1)
      [ -n "$cpu" ] && [ -n "$mem" ] || continue
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$name" "$node" "$(cat "$cpu/cpuacct.usage")" \
        "$(cat "$mem/memory.usage_in_bytes")" "$(cat "$mem/memory.max_usage_in_bytes")"
    done
    sleep 1
  done
}
sample > "$here/samples.tsv" &
sampler=$!
set +e
"$dw" run --clients 2 --tcp-flows "$flows" --udp-flows "$flows" --interval "$interval" \
  --trigger delete --ready-timeout 300 --kubeconfig "$kc" --out "$here/out" 2>&1 | tee "$here/run.log"
echo "exit ${PIPESTATUS[0]}" | tee -a "$here/run.log"
kill "$sampler"
python3 - "$here/samples.tsv" "$flows" > "$here/summary.txt" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
flows = int(sys.argv[2])  # of each protocol, over the whole trial
machine = [r for r in rows if r["pod"] == "machine"]
if machine:
    busy = sorted(int(r["cpu_ns"]) / 10 for r in machine)
    soft = sorted(int(r["mem_bytes"]) / 10 for r in machine)
    print(f"machine busy: median {busy[len(busy) // 2]:.0f} %, max {busy[-1]:.0f} % of both cores; "
          f"softirq (the kernel's packet path) median {soft[len(soft) // 2]:.0f} %, max {soft[-1]:.0f} % ({len(machine)} samples)")
probes = [p for p in dict.fromkeys(r["pod"] for r in rows) if "probe" in p]
for p in sorted({r["pod"] for r in rows} - {"machine"}):
    rs = [r for r in rows if r["pod"] == p]
    if p in probes[1:]:
        # A Deployment's replacement for the deleted probe pod: it held no flow.
        print(f"{p} on {rs[0]['node']}: the replacement probe pod (no flows held)")
        continue
    held = flows if "probe" in p else flows // 2  # the probe holds every flow, a shard half
    k = 2 * held / 1000
    first, last = rs[0], rs[-1]
    cpu_s = (int(last["cpu_ns"]) - int(first["cpu_ns"])) / 1e9
    span = max(float(last["t_s"]) - float(first["t_s"]), 1)
    peak = max(int(r["mem_max_bytes"]) for r in rs) / 2**20
    print(f"{p} on {first['node']} ({held} TCP + {held} UDP): {len(rs)} samples over {span:.0f} s; "
          f"CPU {cpu_s:.1f} s ({cpu_s / span * 100:.0f} % of one core, {cpu_s / span / k:.3f} core per 1,000 flows); "
          f"peak memory {peak:.1f} MiB ({peak / k:.2f} MiB per 1,000 flows)")
PY
cat "$here/summary.txt"
