#!/usr/bin/env bash
# Runs one test N times in a row, each as its own `cargo test` (so its own process, ports
# and namespaces), with two extra busy loops on top of whatever else loads the machine.
# Usage: loop.sh N LOGFILE cargo-test-args...   (run from the repository root, as root)
# Prints one line per run (pass/fail, load average) and the counts at the end.
set -uo pipefail
n=$1 log=$2; shift 2
yes > /dev/null & y1=$!
yes > /dev/null & y2=$!
trap 'kill $y1 $y2 2>/dev/null' EXIT
pass=0 fail=0
: > "$log"
for i in $(seq 1 "$n"); do
  if cargo test "$@" >> "$log" 2>&1; then r=pass; pass=$((pass + 1)); else r=FAIL; fail=$((fail + 1)); fi
  echo "run $i: $r (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "passed $pass of $n, failed $fail"
