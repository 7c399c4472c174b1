#!/usr/bin/env bash
# CI entry point for the local-cluster end-to-end tests (`make e2e-cluster`; .ci/run calls this):
# installs packages, builds Kubernetes/etcd when not cached, builds the project image and the
# example services' images, brings up a two-node cluster, builds every cluster test binary in one
# cargo run (make e2e-build), then runs every cluster test in three steps, and always tears down
# at the end (trap) and prints the phase timings.
#
#   1. alone: make e2e-attach-cluster-wide (a node's cordon, the shared drainwatch-system RBAC
#      objects), then make e2e-faults (kube-apiserver restarted, a kubelet stopped, SIGKILL then
#      cleanup of scale-down and drain-node runs). First, while `make test` holds the cores in
#      .ci/run: these wait on Kubernetes' timers (grace periods, the node monitor) more than on
#      the CPU, and the lanes after them get the cores.
#   2. three lanes side by side (their tests keep to objects of their own, and most of a trial is
#      waiting on Kubernetes, so three share the machine well):
#        probe:  make e2e-k8s-core (k8s_e2e, k8s_parallel, k8s_faults' own-namespace tests),
#                make e2e-compare (its own namespace)
#        attach: make e2e-attach-core (the example services' own Deployments), then make
#                e2e-shards (--clients 2 as client pods, one per node; a namespace of its own)
#        walkthrough: make e2e-walkthrough (docs/gate-your-service.md as copied, in a namespace of
#                its own; its make example-images reuses the binaries and images already built),
#                make docker-run-cluster (docs/other-ci.md's docker run and GitLab job), then make
#                test-action (the documented gate workflow under nektos/act, each leg in
#                namespaces of its own; it loads its own build of the project image's tag into
#                the nodes, so it comes after docker-run-cluster, which checks the archive's), then
#                make e2e-attach-long (a pod killed at its 240 s grace boundary, a namespace of its own)
#   3. the smoke test, teardown and the clean-machine check.
# Each lane's lines are prefixed with its name. Exit status: non-zero if any phase failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_root
export NODES=${NODES:-2}
# The project's image and static binary for the tests: optimised dependencies, the drainwatch
# package unoptimised (Cargo.toml's test-image profile). Its release build was the longest build
# of this run (225 s beside `make test`); the cluster tests check behaviour, not speed (the
# benchmarks build `release`).
export DRAINWATCH_IMAGE_PROFILE=${DRAINWATCH_IMAGE_PROFILE:-test-image}
TIMES=$(mktemp /tmp/drainwatch-ci-times.XXXXXX)
# Each phase's output, kept so that a failure's reason is printed again at the very end: the
# lanes interleave, and the component logs printed on failure push it far up (a CI that keeps
# only the tail of the output showed "test-action FAILED (2)" and nothing of why).
PHASE_LOGS=$(mktemp -d /tmp/drainwatch-ci-phases.XXXXXX)
failed=0
# phase NAME CMD...: runs CMD, its output also kept in $PHASE_LOGS/NAME.log; appends "NAME
# SECONDS RC" to $TIMES (lanes run in subshells, so the record is a file, not an array)
phase() {
  local name=$1 t rc; shift
  t=$(date +%s.%N)
  echo "::: phase $name (at $(date +%T))"
  "$@" 2>&1 | tee "$PHASE_LOGS/$name.log"; rc=${PIPESTATUS[0]}
  echo "$name $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') $rc" >> "$TIMES"
  [ "$rc" = 0 ] || { failed=1; echo "$name" >> "$PHASE_LOGS/failed"; echo "::: phase $name FAILED (exit $rc)"; }
  return "$rc"
}
# why_failed: for each failed phase, the lines of its output that say what failed, then its last
# lines (kept short: this is the last thing printed)
why_failed() {
  [ -s "$PHASE_LOGS/failed" ] || return 0
  local name
  while read -r name; do
    echo "::: why $name failed: its lines naming a failure, then its last 12 lines"
    grep -E 'FAIL|panicked|^error|Error:|test result: FAILED|assertion' "$PHASE_LOGS/$name.log" | tail -n 20 | cut -c1-400
    echo "  ..."
    tail -n 12 "$PHASE_LOGS/$name.log" | cut -c1-400
  done < "$PHASE_LOGS/failed"
}
report() {
  echo
  echo "::: local-cluster e2e phase timings"
  local name secs rc
  while read -r name secs rc; do
    printf '    %-24s %7ss  %s\n' "$name" "$secs" "$([ "$rc" = 0 ] && echo ok || echo "FAILED ($rc)")"
  done < "$TIMES"
  rm -f "$TIMES"
}
LANE_PIDS=()
# kill_tree PID: PID and every process below it (a lane's cargo test, its drainwatch runs)
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null
}
on_exit() {
  local rc=$? pid
  for pid in "${LANE_PIDS[@]}"; do kill_tree "$pid"; done
  wait 2>/dev/null
  if [ "$failed" = 1 ] && [ -d "$L" ]; then
    echo "::: failure: last 30 lines of each component log ($L)"
    for f in "$L"/*.log; do [ -f "$f" ] && { echo "----- $f"; tail -n 30 "$f"; }; done
  fi
  phase teardown "$LC_DIR/down.sh"
  phase assert-clean "$REPO_ROOT/tests/e2e/assert-clean.sh"
  report
  why_failed
  rm -rf "$PHASE_LOGS"
  [ "$failed" = 0 ] && [ "$rc" = 0 ] || exit 1
}
trap on_exit EXIT
trap 'exit 130' INT TERM

mk() { make -C "$REPO_ROOT" --no-print-directory "$@" DRAINWATCH_E2E_KUBECONFIG="$ADMIN_KUBECONFIG"; }
lane_probe() {
  phase e2e-k8s-core mk e2e-k8s-core || return 1
  # drainwatch compare on runs made here: one rollout-restart trial of good-shutdown against one
  # of bad-shutdown exits 1 naming the regression, good against good exits 0 (tests/compare_e2e.rs,
  # in a namespace of its own)
  phase e2e-compare mk e2e-compare || return 1
  # A rollout of bad-shutdown through Traefik (built from the Go module proxy, cached; the
  # foreground's ingress phase may be building it: the build holds a lock), each 502
  # attributed to the pod Traefik sent it to (tests/ingress_e2e.rs, a namespace of its own).
  phase e2e-ingress mk e2e-ingress || return 1
}
lane_attach() {
  phase e2e-attach-core mk e2e-attach-core || return 1
  # --clients 2 as client pods, one per node (tests/shards_e2e.rs, in namespaces of its own)
  phase e2e-shards mk e2e-shards || return 1
  # Envoy Gateway installed as its chart would (built from the module proxy, cached; the
  # foreground's envoy-gateway phase may be building it: the build holds a lock), then a
  # rollout of bad-shutdown through it, each failure attributed through Envoy's access log
  # (tests/ingress_envoy_e2e.rs, a namespace of its own)
  phase e2e-envoy-gateway mk e2e-envoy-gateway || return 1
}
# docs/gate-your-service.md's walk-through, its blocks run as copied (tests/walkthrough_e2e.rs),
# then the documented gate workflow under nektos/act: the two example services as a matrix of
# two parallel legs, good passes, bad fails, two artifacts, two PR comments (tests/action/run.sh).
# Beside the other lanes since the walk-through's `make example-images` rebuilds nothing: build.rs
# no longer reruns on .git/index, which `git describe --dirty` rewrites (a rebuild of the static
# binary while test-action served and checksummed it failed a leg once).
lane_walkthrough() {
  phase e2e-walkthrough mk e2e-walkthrough || return 1
  # docs/other-ci.md against the same cluster: its docker run snippets with podman as docker (as
  # uid 65532 and as a runner user; exit 0, 1, 2 and 130) and its GitLab job (the release binary
  # checksum-verified from a loopback server); README's docker run on a renamed example service
  # (the walk-through imported its image). Before test-action, in this lane: it checks that
  # the nodes hold the project image archive's digest, and test-action's setup step loads a
  # build of its own under the same tag into the nodes (kind load docker-image).
  phase docker-run-cluster mk docker-run-cluster || return 1
  phase test-action mk test-action || return 1
  phase e2e-attach-long mk e2e-attach-long || return 1
}
# lane NAME FUNCTION: runs FUNCTION in the background, each output line prefixed with [NAME]
lane() {
  "$2" > >(sed -u "s/^/[$1] /") 2>&1 &
  LANE_PIDS+=("$!")
}

phase deps "$LC_DIR/install-deps.sh" || exit 1
phase build-k8s "$LC_DIR/build.sh" || exit 1
phase image "$LC_DIR/image.sh" || exit 1
# DRAINWATCH_CLUSTER_LOCK=path: hold that lock from cluster-up to teardown, so that others who
# use the machine's one cluster under the same lock wait for this run (and it for them).
if [ -n "${DRAINWATCH_CLUSTER_LOCK:-}" ]; then
  exec {cluster_lock}>"$DRAINWATCH_CLUSTER_LOCK"
  echo "::: waiting for $DRAINWATCH_CLUSTER_LOCK"
  flock "$cluster_lock"
fi
phase cluster-up "$LC_DIR/up.sh" || exit 1
phase example-images mk example-images || exit 1
# Every cluster test binary in one cargo run, before the first test; the phases after it run
# the executables it lists directly (scripts/cluster-test.sh). Through cargo, a test phase
# waited on cargo's lock while `make test` beside it held that lock: e2e-faults once 340 s
# before it could start, and again 200 s after e2e-build had built everything.
CLUSTER_TEST_LIST=${CARGO_TARGET_DIR:?the Makefile exports CARGO_TARGET_DIR}/cluster-tests.txt
phase e2e-build mk e2e-build CLUSTER_TEST_LIST="$CLUSTER_TEST_LIST" || exit 1
export CLUSTER_TEST_BINS=$CLUSTER_TEST_LIST

# Alone: a node's cordon would move the lanes' pods, the RBAC test rebinds the shared
# drainwatch-system ServiceAccount, the faults stop the API server and a kubelet.
phase e2e-attach-cluster-wide mk e2e-attach-cluster-wide || exit 1
phase e2e-faults mk e2e-faults || exit 1

lane probe lane_probe
lane attach lane_attach
lane walkthrough lane_walkthrough
lanes_failed=0
for pid in "${LANE_PIDS[@]}"; do wait "$pid" || lanes_failed=1; done
LANE_PIDS=()
[ "$lanes_failed" = 0 ] || { failed=1; exit 1; }

phase e2e-smoke "$REPO_ROOT/tests/e2e/smoke.sh" || exit 1
