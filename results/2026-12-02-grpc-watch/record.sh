#!/usr/bin/env bash
# record.sh NAME ARGS...: runs `drainwatch run ARGS --out results/2026-12-02-grpc-watch/NAME/out`
# on the local cluster from the repository root and keeps the exact command (command.txt), its
# exit code, stdout and stderr beside the output.
#   DW      the drainwatch binary (default: this checkout's debug build)
#   IMAGE   the client pod's image (default: ghcr.io/drainwatch/drainwatch:0.2.0-grpcwatch)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=$1; shift
dir=$here/$name
rm -rf "$dir"; mkdir -p "$dir"
DW=${DW:-${CARGO_TARGET_DIR:-$root/target}/debug/drainwatch}
IMAGE=${IMAGE:-ghcr.io/drainwatch/drainwatch:0.2.0-grpcwatch}
cmd=(drainwatch run --kubeconfig /var/lib/drainwatch-cluster/admin.kubeconfig --image "$IMAGE" "$@"
  --out "results/2026-12-02-grpc-watch/$name/out")
printf '%q ' "${cmd[@]}" > "$dir/command.txt"; echo >> "$dir/command.txt"
(cd "$root" && "$DW" "${cmd[@]:1}" > "$dir/stdout" 2> "$dir/stderr")
echo $? > "$dir/exit"
echo "$name: exit $(cat "$dir/exit")"
