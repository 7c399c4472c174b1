#!/usr/bin/env bash
# `make test` N times in a row on a loaded machine: two busy loops (`yes`) on top of whatever
# else runs (here: the other builds and cluster tests of the session). Run as root from the
# repository root. One line per run (pass/fail, seconds, load average), then the counts; each
# run's whole output goes to LOGDIR/run-K.log.
# Usage: loop.sh N LOGDIR
set -uo pipefail
n=$1 logdir=$2
mkdir -p "$logdir"
yes > /dev/null & y1=$!
yes > /dev/null & y2=$!
trap 'kill $y1 $y2 2>/dev/null' EXIT
pass=0 fail=0
for i in $(seq 1 "$n"); do
  start=$SECONDS
  if make test > "$logdir/run-$i.log" 2>&1; then r=pass; pass=$((pass + 1)); else r=FAIL; fail=$((fail + 1)); fi
  echo "run $i: $r in $((SECONDS - start))s (load average $(cut -d' ' -f1-3 /proc/loadavg)); $(grep -c '^test result: ok' "$logdir/run-$i.log") binaries ok, $(grep -E '^test result' "$logdir/run-$i.log" | awk '{p+=$4; f+=$6; ig+=$8} END {print p" passed, "f" failed, "ig" ignored"}')"
done
echo "passed $pass of $n, failed $fail"
