#!/usr/bin/env bash
unset CARGO_TARGET_DIR
cd /work/ci-run
echo "# .ci/run on a clean clone of $(git rev-parse --short HEAD) (git clone /work/main /work/ci-run), $(date -u +%FT%TZ)"
echo "# caches: /var/cache/drainwatch (cargo-target with this tree's dependencies and musl release/example builds of /work/main), /var/cache/drainwatch-k8s (Kubernetes binaries built)"
echo "# load at start: $(uptime)"
.ci/run
echo "CI-DONE rc=$? $(date -u +%FT%TZ)"
