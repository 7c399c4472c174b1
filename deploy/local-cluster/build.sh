#!/usr/bin/env bash
# Builds Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
# kubectl) and etcd from the Go module proxy into the version-keyed cache:
#   $DRAINWATCH_K8S_CACHE/$K8S_VERSION/bin/   and   $DRAINWATCH_K8S_CACHE/etcd-$ETCD_VERSION/bin/
# A present binary whose --version matches is reused; a missing or mismatched one is rebuilt.
# The cold build takes ~10 min on 2 cores; run it in the background if your shell has a time limit:
#   nohup deploy/local-cluster/build.sh > /tmp/k8s-build.log 2>&1 &
# build.sh --check: exit 0 when everything is cached (builds nothing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go); the cold build needs Go >= 1.24"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
export GOMODCACHE=${GOMODCACHE_OVERRIDE:-$GO_CACHE_ROOT/mod}
export GOCACHE=${GOCACHE_OVERRIDE:-$GO_CACHE_ROOT/build}
JOBS=${BUILD_JOBS:-$(nproc)}
K8S_CMDS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"

k8s_ok() {
  local c
  for c in $K8S_CMDS; do
    [ -x "$K8S_BIN/$c" ] || return 1
  done
  # the client binaries print 'Client Version: vX', the servers 'Kubernetes vX'
  "$K8S_BIN/kubelet" --version 2>/dev/null | grep -x "Kubernetes $K8S_VERSION" >/dev/null || return 1
  "$K8S_BIN/kube-apiserver" --version 2>/dev/null | grep -x "Kubernetes $K8S_VERSION" >/dev/null || return 1
  "$K8S_BIN/kubectl" version --client 2>/dev/null | grep "Client Version: $K8S_VERSION" >/dev/null || return 1
}
etcd_ok() {
  [ -x "$ETCD_BIN/etcd" ] && "$ETCD_BIN/etcd" --version 2>/dev/null | grep -x "etcd Version: ${ETCD_VERSION#v}" >/dev/null
}

build_k8s() {
  local root=$DRAINWATCH_K8S_CACHE/$K8S_VERSION
  local w=$root/src stg="v0.${K8S_VERSION#v1.}" minor
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  mkdir -p "$K8S_BIN" "$w"
  log "k8s $K8S_VERSION: resolving k8s.io/kubernetes from the module proxy"
  local json gomod commit
  json=$(cd / && go mod download -json "k8s.io/kubernetes@$K8S_VERSION")
  gomod=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])' <<<"$json")
  commit=$(python3 -c 'import json,sys; print((json.load(sys.stdin).get("Origin") or {}).get("Hash","unknown"))' <<<"$json")
  # The staging modules are derived from the published go.mod (k8s.io/X => ./staging/src/k8s.io/X)
  # and pinned to their published v0.<minor>.<patch> tags.
  local staging godebug
  staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$gomod")
  [ -n "$staging" ] || die "no staging replace lines found in $gomod"
  godebug=$(grep -m1 '^godebug' "$gomod" || true)
  log "k8s: $(echo "$staging" | wc -w) staging modules -> $stg; commit $commit; ${godebug:-no godebug line}"
  {
    echo "module local/drainwatch-k8sbuild"; echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"; echo
    [ -n "$godebug" ] && { echo "$godebug"; echo; }   # keep upstream's GODEBUG defaults
    echo "replace ("
    for m in $staging; do printf '\t%s => %s %s\n' "$m" "$m" "$stg"; done
    echo ")"
  } > "$w/go.mod"
  rm -f "$w/go.sum"
  (cd "$w" && go get $(for c in $K8S_CMDS; do echo "k8s.io/kubernetes/cmd/$c@$K8S_VERSION"; done))
  log "k8s: modules resolved; compiling (-p $JOBS)"
  # version stamping: the same keys as upstream hack/lib/version.sh
  local date ld="-s -w" p
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitCommit=$commit -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  # one go build for all six so the shared packages compile once
  (cd "$w" && go build -p "$JOBS" -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ld" -o "$K8S_BIN/" \
      $(for c in $K8S_CMDS; do echo "k8s.io/kubernetes/cmd/$c"; done))
  k8s_ok || die "k8s binaries built but --version does not report $K8S_VERSION"
  log "k8s: $("$K8S_BIN/kube-apiserver" --version) in $K8S_BIN"
}

build_etcd() {
  local root=$DRAINWATCH_K8S_CACHE/etcd-$ETCD_VERSION w
  w=$root/src
  mkdir -p "$ETCD_BIN" "$w"
  log "etcd $ETCD_VERSION: resolving from the module proxy"
  printf 'module local/drainwatch-etcdbuild\n\ngo %s.0\n' \
    "$(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')" > "$w/go.mod"
  rm -f "$w/go.sum"
  (cd "$w" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" "go.etcd.io/etcd/etcdctl/v3@$ETCD_VERSION")
  local commit
  commit=$(cd / && go mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
    | python3 -c 'import json,sys; print((json.load(sys.stdin).get("Origin") or {}).get("Hash","unknown")[:10])')
  log "etcd: compiling"
  (cd "$w" && go build -p "$JOBS" -trimpath \
      -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$commit" \
      -o "$ETCD_BIN/etcd" go.etcd.io/etcd/server/v3 &&
    go build -p "$JOBS" -trimpath -ldflags "-s -w" -o "$ETCD_BIN/etcdctl" go.etcd.io/etcd/etcdctl/v3)
  etcd_ok || die "etcd built but --version does not report $ETCD_VERSION"
  log "etcd: $("$ETCD_BIN/etcd" --version | head -1) in $ETCD_BIN"
}

if [ "${1:-}" = --check ]; then # exit 0 when every binary is cached and version-matching
  etcd_ok && k8s_ok; exit $?
fi
mkdir -p "$DRAINWATCH_K8S_CACHE"
# one build at a time (a second `make cluster-up` waits instead of racing the first)
exec 9>"$DRAINWATCH_K8S_CACHE/.build.lock"
flock 9
# etcd and Kubernetes build side by side: each spends its first ~20-30 s resolving modules (network,
# one core idle) and the Kubernetes compile leaves ~20% of two cores idle in its link steps, so
# the overlap is what brings the cold build on 2 cores near 10 min (measured serial: 10 min 30 s).
pids=()
if etcd_ok; then log "etcd $ETCD_VERSION: cached in $ETCD_BIN"; else
  (t=$(date +%s); build_etcd; log "etcd build took $(( $(date +%s) - t ))s") &
  pids+=("$!:etcd"); fi
if k8s_ok; then log "k8s $K8S_VERSION: cached in $K8S_BIN"; else
  (t=$(date +%s); build_k8s; log "k8s build took $(( $(date +%s) - t ))s") &
  pids+=("$!:k8s"); fi
failed=""
for p in "${pids[@]}"; do
  wait "${p%%:*}" || failed="$failed ${p#*:}"
done
[ -z "$failed" ] || die "build failed:$failed (its output is above)"
