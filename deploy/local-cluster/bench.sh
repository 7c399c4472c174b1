#!/usr/bin/env bash
# Measurements of the local testbed, written down in README.md and results/testbed/<date>/.
#
#   bench.sh updown [N]     N cycles (default 3) of: cluster-up (warm, binaries and images cached),
#                           a 4-replica pause Deployment rolled out, cluster-down; prints the times
#   bench.sh idle [SECONDS] with the cluster up (run cluster-up first), samples every component's
#                           CPU time over SECONDS (default 60) and its RSS at the end, plus the
#                           shims and pod processes; prints a table and the totals
#
# Do not run anything heavy (builds) at the same time; the load average is printed with the results.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
HZ=$(getconf CLK_TCK)
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

updown() {
  local n=${1:-3} i t up ready down
  echo "# bench.sh updown $n  ($(date -u +%FT%TZ); $(nproc) cores; Kubernetes $K8S_VERSION; NODES=${NODES:-2})"
  echo "# loadavg at start: $(cat /proc/loadavg)"
  "$LC_DIR/down.sh" >/dev/null
  printf '%-5s %-22s %-20s %-16s %-14s %s\n' run "cluster-up wall (s)" "all Ready (s)" "4 pods Ready (s)" "cluster-down (s)" loadavg
  for i in $(seq 1 "$n"); do
    t=$(now)
    out=$("$LC_DIR/up.sh" 2>&1) || { echo "$out"; exit 1; }
    up=$(since "$t")
    ready=$(sed -n 's/.*Ready in \([0-9.]*\)s$/\1/p' <<<"$out")
    t=$(now)
    kc create deployment bench-pause --image="$PAUSE_IMAGE" --replicas=4 >/dev/null
    kc patch deployment bench-pause --type=json \
      -p='[{"op":"add","path":"/spec/template/spec/containers/0/imagePullPolicy","value":"Never"}]' >/dev/null
    kc rollout status deployment/bench-pause --timeout=90s >/dev/null
    pods=$(since "$t")
    t=$(now)
    "$LC_DIR/down.sh" >/dev/null
    down=$(since "$t")
    printf '%-5s %-22s %-20s %-16s %-14s %s\n' "$i" "$up" "$ready" "$pods" "$down" "$(cut -d' ' -f1-3 /proc/loadavg)"
  done
}

idle() {
  local secs=${1:-60} c pid
  [ -f "$S/nodes" ] || die "no cluster up (make cluster-up first)"
  declare -A T0 PIDOF
  # components by recorded PID; shims and pod processes by our cgroups / our containerd socket
  for f in "$PIDS"/*; do
    case $f in *.exe) continue;; esac
    c=${f##*/}; alive "$c" && PIDOF[$c]=$(cat "$f")
  done
  extra() { # shims + processes in our cgroups
    local p exe cmd
    for p in /proc/[0-9]*; do
      exe=$(readlink "$p/exe" 2>/dev/null) || continue
      case ${exe##*/} in containerd-shim*)
        cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)
        case $cmd in *"-address $R/"*) echo "shims ${p#/proc/}";; esac; continue;; esac
      grep -q "/${CGROUP_PREFIX}node" "$p/cgroup" 2>/dev/null && echo "pods ${p#/proc/}"
    done
  }
  ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
  rss() { awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
  mapfile -t EXTRA < <(extra)
  for c in "${!PIDOF[@]}"; do T0[$c]=$(ticks "${PIDOF[$c]}"); done
  declare -A XT0
  for e in "${EXTRA[@]}"; do XT0[${e#* }]=$(ticks "${e#* }"); done
  local la0 t
  la0=$(cut -d' ' -f1-3 /proc/loadavg); t=$(now)
  sleep "$secs"   # the measurement window itself (not a readiness wait)
  local el; el=$(since "$t")
  echo "# bench.sh idle $secs  ($(date -u +%FT%TZ); $(nproc) cores; $(cat "$S/nodes") nodes; window ${el}s)"
  echo "# loadavg before: $la0  after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# pods: $(kc get pods -A --no-headers 2>/dev/null | wc -l) ($(kc get pods -A --no-headers 2>/dev/null | awk '{print $1"/"$2}' | tr '\n' ' '))"
  printf '%-26s %8s %10s\n' component "CPU %" "RSS MiB"
  local tot_cpu=0 tot_rss=0 cpu r
  for c in $(printf '%s\n' "${!PIDOF[@]}" | sort); do
    pid=${PIDOF[$c]}
    cpu=$(awk -v a="${T0[$c]}" -v b="$(ticks "$pid")" -v hz="$HZ" -v s="$el" 'BEGIN{printf "%.2f", (b-a)/hz/s*100}')
    r=$(rss "$pid")
    printf '%-26s %8s %10.1f\n' "$c" "$cpu" "$(awk -v r="$r" 'BEGIN{print r/1024}')"
    tot_cpu=$(awk -v a="$tot_cpu" -v b="$cpu" 'BEGIN{print a+b}'); tot_rss=$((tot_rss + r))
  done
  for grp in shims pods; do
    local gc=0 gr=0 n=0
    for e in "${EXTRA[@]}"; do
      [ "${e%% *}" = "$grp" ] || continue
      pid=${e#* }; [ -d "/proc/$pid" ] || continue
      n=$((n + 1))
      gc=$(awk -v g="$gc" -v a="${XT0[$pid]}" -v b="$(ticks "$pid")" -v hz="$HZ" -v s="$el" 'BEGIN{print g+(b-a)/hz/s*100}')
      gr=$((gr + $(rss "$pid")))
    done
    printf '%-26s %8.2f %10.1f\n' "$grp ($n processes)" "$gc" "$(awk -v r="$gr" 'BEGIN{print r/1024}')"
    tot_cpu=$(awk -v a="$tot_cpu" -v b="$gc" 'BEGIN{print a+b}'); tot_rss=$((tot_rss + gr))
  done
  printf '%-26s %8.2f %10.1f\n' "TOTAL" "$tot_cpu" "$(awk -v r="$tot_rss" 'BEGIN{print r/1024}')"
  echo "# CPU % is of one core (100 = one core busy); RSS counts shared pages once per process"
}

case ${1:-} in
  updown) shift; updown "$@";;
  idle) shift; idle "$@";;
  *) sed -n '2,12p' "$0"; exit 2;;
esac
