#!/usr/bin/env bash
# cold .ci/run: every build cache empty
unset CARGO_TARGET_DIR
export DRAINWATCH_CACHE=/var/cache/dw-cold/cache
export DRAINWATCH_K8S_CACHE=/var/cache/dw-cold/k8s
export CARGO_HOME=/var/cache/dw-cold/cargo-home
export GOPATH=/var/cache/dw-cold/gopath GOCACHE=/var/cache/dw-cold/gocache
export npm_config_cache=/var/cache/dw-cold/npm PIP_CACHE_DIR=/var/cache/dw-cold/pip
export PATH=/root/.cargo/bin:$PATH
export DRAINWATCH_CLUSTER_LOCK=/run/lock/drainwatch-e2e-shared.lock
cd /work/ci-cold
echo "# cold .ci/run on a clean clone of $(git rev-parse --short HEAD), $(date -u +%FT%TZ), caches: $DRAINWATCH_CACHE $DRAINWATCH_K8S_CACHE $CARGO_HOME (all empty)"
echo "# load: $(uptime)"
.ci/run
echo "CI-DONE rc=$? $(date -u +%FT%TZ)"
