#!/usr/bin/env bash
# The real runs behind results/2026-12-01-compare-cluster/ (README.md there): run from the repo
# root against the local cluster. `run.sh attach` deploys the two example services into a
# namespace of their own and runs good-shutdown 5 times, bad-shutdown 5 times and good-shutdown
# 5 times again (rollout-restart, the flags of tests/attach_e2e.rs); `run.sh probe` runs the
# probe 5 times with --drain-behavior drain and 5 times with exit-now (trigger delete, the flags
# of tests/k8s_e2e.rs); `run.sh compare` makes the three comparisons. Each step prints its
# wall time; every output directory must not exist yet (drainwatch refuses a non-empty --out).
#
#   DW   the drainwatch binary (default: $CARGO_TARGET_DIR/debug/drainwatch)
#   KC   the admin kubeconfig (default: the local cluster's)
#   NS   the namespace of the example services (default: dw-evidence-compare)
set -uo pipefail
R=results/2026-12-01-compare-cluster
DW=${DW:-${CARGO_TARGET_DIR:-target}/debug/drainwatch}
KC=${KC:-/var/lib/drainwatch-cluster/admin.kubeconfig}
NS=${NS:-dw-evidence-compare}
ATTACH_IMAGE=${ATTACH_IMAGE:-ghcr.io/drainwatch/drainwatch:0.2.0-attach}
kc() { kubectl --kubeconfig "$KC" "$@"; }

# The example manifests with their namespace replaced (the part-of label stays).
examples() {
  local f
  for f in namespace good-shutdown bad-shutdown; do
    echo "---"
    sed -e "s/^  name: drainwatch-examples$/  name: $NS/" -e "s/^  namespace: drainwatch-examples$/  namespace: $NS/" \
      "examples/k8s/$f.yaml"
  done
}

timed() { # name cmd... : runs cmd, keeps its stdout and stderr beside the run, prints exit code and seconds
  local name=$1 t0 rc; shift
  t0=$(date +%s)
  echo "::: $name: $*"
  "$@" >"$R/$name.stdout.txt" 2>"$R/$name.stderr.txt"; rc=$?
  echo "::: $name: exit $rc after $(( $(date +%s) - t0 )) s ($(date -u +%H:%M:%SZ))"
}

attach_run() { # out target
  timed "$1" "$DW" run --target "$2" --target-namespace "$NS" --image "$ATTACH_IMAGE" \
    --trigger rollout-restart --repeat 5 --tcp-flows 4 --dial-rate 20 --interval 200ms \
    --settle-seconds 3 --post-terminal-grace 3 --ready-timeout 120 \
    --kubeconfig "$KC" --out "$R/$1"
}

probe_run() { # out behavior
  timed "$1" "$DW" run --platform kubernetes --drain-behavior "$2" --repeat 5 \
    --tcp-flows 3 --udp-flows 3 --grace-period 8 --settle-seconds 2 --post-terminal-grace 3 \
    --ready-timeout 90 --kubeconfig "$KC" --out "$R/$1"
}

compare() { # name base new
  mkdir -p "$R/$1"
  echo "::: compare $1: $DW compare $R/$2 $R/$3 --json $R/$1/compare.json"
  "$DW" compare "$R/$2" "$R/$3" --json "$R/$1/compare.json" --markdown "$R/$1/compare.md" >"$R/$1/stdout.txt" 2>"$R/$1/stderr.txt"
  local rc=$?
  echo "exit $rc" >>"$R/$1/stdout.txt"
  cat "$R/$1/stdout.txt"
}

case ${1:-} in
  attach)
    examples | kc apply -f -
    kc -n "$NS" rollout status deployment/good-shutdown --timeout 180s
    kc -n "$NS" rollout status deployment/bad-shutdown --timeout 180s
    attach_run good-a deployment/good-shutdown
    attach_run bad deployment/bad-shutdown
    attach_run good-b deployment/good-shutdown
    ;;
  probe)
    probe_run probe-drain drain
    probe_run probe-exit-now exit-now
    ;;
  compare)
    compare good-vs-bad good-a bad
    compare good-vs-good good-a good-b
    compare drain-vs-exit-now probe-drain probe-exit-now
    ;;
  *) echo "usage: $0 attach|probe|compare" >&2; exit 2 ;;
esac
