#!/usr/bin/env bash
# Scale: two client pods (one per node, nodes as network hosts) sharing FLOWS TCP + FLOWS UDP
# flows against the probe (default 9,000 each: 4,500 + 4,500 per pod), trigger delete. A sampler reads
# each client pod's cgroup once a second (cpuacct.usage, memory.usage_in_bytes and
# memory.max_usage_in_bytes, cgroup v1 under the node's kubelet cgroup root) into samples.tsv;
# the CPU and peak memory per 1,000 flows per pod come from it (summary.txt).
#
#   FLOWS=9000 results/2026-12-03-shards-scale/run.sh     (from the repository root, as root)
set -euo pipefail
flows=${FLOWS:-9000}
here=results/2026-12-03-shards-scale/$flows
kc=/var/lib/drainwatch-cluster/admin.kubeconfig
kubectl=(/var/cache/drainwatch-k8s/v1.34.4/bin/kubectl --kubeconfig "$kc")
dw=${DRAINWATCH:-${CARGO_TARGET_DIR:-/var/cache/drainwatch/cargo-target}/debug/drainwatch}
export NODE_NETNS=1 NODES=2
make cluster-up
rm -rf "$here/out"
mkdir -p "$here"
cp /var/lib/drainwatch-cluster/cluster-info.json "$here/"
sample() {
  printf 't_s\tpod\tnode\tcpu_ns\tmem_bytes\tmem_max_bytes\n'
  local t0; t0=$(date +%s.%N)
  while :; do
    "${kubectl[@]}" get pods -A -l app.kubernetes.io/name=drainwatch-client \
      -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.spec.nodeName}{"\n"}{end}' 2>/dev/null |
    while read -r name uid node; do
      [ -n "$uid" ] || continue
      cpu=$(find /sys/fs/cgroup/cpuacct/drainwatch-node*/kubepods -maxdepth 2 -type d -name "pod$uid" 2>/dev/null | head -1)
      mem=$(find /sys/fs/cgroup/memory/drainwatch-node*/kubepods -maxdepth 2 -type d -name "pod$uid" 2>/dev/null | head -1)
      [ -n "$cpu" ] && [ -n "$mem" ] || continue
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')" \
        "$name" "$node" "$(cat "$cpu/cpuacct.usage")" "$(cat "$mem/memory.usage_in_bytes")" "$(cat "$mem/memory.max_usage_in_bytes")"
    done
    sleep 1
  done
}
sample > "$here/samples.tsv" &
sampler=$!
set +e
"$dw" run --clients 2 --tcp-flows "$flows" --udp-flows "$flows" --trigger delete \
  --ready-timeout 300 --kubeconfig "$kc" --out "$here/out" 2>&1 | tee "$here/run.log"
echo "exit ${PIPESTATUS[0]}" | tee -a "$here/run.log"
kill "$sampler"
python3 - "$here/samples.tsv" "$flows" > "$here/summary.txt" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
pods = sorted({r["pod"] for r in rows})
per_pod = int(sys.argv[2])  # TCP + UDP flows per pod: half of each protocol's
k = per_pod / 1000
print(f"per client pod: {per_pod // 2} TCP + {per_pod // 2} UDP flows ({per_pod} flows)")
for p in pods:
    rs = [r for r in rows if r["pod"] == p]
    first, last = rs[0], rs[-1]
    cpu_s = (int(last["cpu_ns"]) - int(first["cpu_ns"])) / 1e9
    span = float(last["t_s"]) - float(first["t_s"])
    peak = max(int(r["mem_max_bytes"]) for r in rs) / 2**20
    print(f"{p} on {first['node']}: {len(rs)} samples over {span:.0f} s; CPU {cpu_s:.1f} s "
          f"({cpu_s / span * 100:.0f} % of one core; {cpu_s / k:.2f} CPU-s per 1,000 flows over the run); "
          f"peak memory {peak:.1f} MiB ({peak / k:.2f} MiB per 1,000 flows)")
PY
cat "$here/summary.txt"
