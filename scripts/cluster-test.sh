#!/usr/bin/env bash
# Runs cluster test binaries: `scripts/cluster-test.sh NAME... -- ARGS` is
# `cargo test --test NAME... -- ARGS`, run from the repository root.
#
# With CLUSTER_TEST_BINS naming the file `make e2e-build` wrote (NAME PATH per line: the cluster
# run sets it), the executables it lists run directly, one after the other, stopping at the first
# that fails, as cargo would: no cargo, so no wait on cargo's build lock while `make test` beside
# it holds that lock. The tests read their paths (the drainwatch binary, the target's tmp dir,
# the manifest dir) from what was compiled in, not from cargo's environment.
set -euo pipefail
cd "$(dirname "$0")/.."

names=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do names+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#names[@]} -gt 0 ] || { echo "cluster-test.sh: no test named (NAME... -- ARGS)" >&2; exit 2; }

if [ -z "${CLUSTER_TEST_BINS:-}" ]; then
  targets=()
  for n in "${names[@]}"; do targets+=(--test "$n"); done
  exec "${CARGO:-cargo}" test "${targets[@]}" -- "$@"
fi

[ -r "$CLUSTER_TEST_BINS" ] || { echo "cluster-test.sh: CLUSTER_TEST_BINS=$CLUSTER_TEST_BINS is not readable (make e2e-build writes it)" >&2; exit 2; }
for n in "${names[@]}"; do
  exe=$(awk -v n="$n" '$1 == n { print $2 }' "$CLUSTER_TEST_BINS")
  [ -n "$exe" ] && [ -x "$exe" ] || { echo "cluster-test.sh: no built executable for $n in $CLUSTER_TEST_BINS (is it in CLUSTER_TESTS, mk/cluster.mk?)" >&2; exit 2; }
  echo "     Running $n ($exe)" >&2
  "$exe" "$@"
done
