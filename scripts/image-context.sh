#!/usr/bin/env bash
# The build context of ./Dockerfile, the one recipe every image build here calls (make image,
# make example-images, make dist, tests/action/run.sh, ci.yml): the static binary as ./drainwatch
# and rootfs/, whose var/lib/drainwatch is the image's state dir (the restore journal,
# DRAINWATCH_STATE_DIR): mode 1777 like /tmp, since the container runs as 65532 or as any
# --user, and COPY keeps a copied directory's mode where --chmod would not set it.
# Usage: scripts/image-context.sh CONTEXT_DIR BINARY
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 CONTEXT_DIR BINARY" >&2; exit 2; }
ctx=$1 bin=$2
[ -x "$bin" ] || { echo "image-context: no executable binary at $bin" >&2; exit 2; }
mkdir -p "$ctx/rootfs/var/lib"
rm -f "$ctx/drainwatch"
cp "$bin" "$ctx/drainwatch"
install -d -m 1777 "$ctx/rootfs/var/lib/drainwatch"
chmod 1777 "$ctx/rootfs/var/lib/drainwatch"  # install -d leaves an existing dir's mode
