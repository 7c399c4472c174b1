#!/usr/bin/env bash
# record.sh NAME ARGS...: runs `drainwatch run ARGS --out results/2026-11-30-attach/NAME/out` on the
# local cluster and keeps the exact command, its exit code, stdout and stderr beside the output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=$1; shift
dir=$here/$name
rm -rf "$dir"; mkdir -p "$dir"
DW=${DW:-${CARGO_TARGET_DIR:-/var/cache/drainwatch/target-attach-k8s}/debug/drainwatch}
cmd=(drainwatch run --kubeconfig /var/lib/drainwatch-cluster/admin.kubeconfig "$@" --out "results/2026-11-30-attach/$name/out")
printf '%q ' "${cmd[@]}" > "$dir/cmd"; echo >> "$dir/cmd"
"$DW" "${cmd[@]:1}" > "$dir/stdout" 2> "$dir/stderr"
echo $? > "$dir/exit"
echo "$name: exit $(cat "$dir/exit")"
