#!/usr/bin/env bash
# Runs the three arms (drain, exit-now, ignore) on the local platform with one variable changed,
# and keeps the reports, the console output and the exact commands under results/.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-/var/cache/drainwatch/cargo-target}/debug/drainwatch}
VERSION=$(grep -m1 '^version' Cargo.toml | cut -d'"' -f2)
OUT=${OUT:-results/$(date -u +%Y-%m-%d)-local-v$VERSION}
REPEAT=${REPEAT:-3}
mkdir -p "$OUT"
: > "$OUT/commands.txt"
for arm in drain exit-now ignore; do
  cmd=("$BIN" run --platform local --drain-behavior "$arm" --grace-period 10 --settle-seconds 3
       --tcp-flows 10 --udp-flows 10 --repeat "$REPEAT" --out "$OUT/$arm")
  echo "${cmd[*]}" | sed "s|$BIN|drainwatch|" >> "$OUT/commands.txt"
  echo "=== arm $arm"
  "${cmd[@]}" > "$OUT/$arm.txt" 2>&1 || { echo "arm $arm failed; see $OUT/$arm.txt"; exit 2; }
  tail -8 "$OUT/$arm.txt"
done
echo "results in $OUT"
