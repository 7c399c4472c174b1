#!/usr/bin/env bash
# cold .ci/run: every build cache empty (new directories for every cache the build uses)
unset CARGO_TARGET_DIR
rm -rf /var/cache/dw-cold && mkdir -p /var/cache/dw-cold
export DRAINWATCH_CACHE=/var/cache/dw-cold/cache
export DRAINWATCH_K8S_CACHE=/var/cache/dw-cold/k8s
export CARGO_HOME=/var/cache/dw-cold/cargo-home
export GOPATH=/var/cache/dw-cold/gopath GOCACHE=/var/cache/dw-cold/gocache GOMODCACHE=/var/cache/dw-cold/gopath/pkg/mod
export npm_config_cache=/var/cache/dw-cold/npm PIP_CACHE_DIR=/var/cache/dw-cold/pip
export PATH=/root/.cargo/bin:$PATH
rm -rf /work/ci-cold && git clone -q /work/main /work/ci-cold
cd /work/ci-cold
echo "# cold .ci/run on a clean clone of $(git rev-parse --short HEAD) (git clone /work/main /work/ci-cold), $(date -u +%FT%TZ)"
echo "# caches: DRAINWATCH_CACHE=$DRAINWATCH_CACHE DRAINWATCH_K8S_CACHE=$DRAINWATCH_K8S_CACHE CARGO_HOME=$CARGO_HOME GOPATH/GOCACHE/npm/pip under /var/cache/dw-cold (all empty); Debian packages already installed"
echo "# load at start: $(uptime)"
.ci/run
echo "CI-DONE rc=$? $(date -u +%FT%TZ)"
