# Common definitions for the kind scripts. Sourced, not executed.
# shellcheck shell=bash
KIND_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$KIND_SCRIPTS/../.." && pwd)
# The testbed's versions and caches first (the Kubernetes build is shared), then kind's own.
# shellcheck source=../local-cluster/versions.env
. "$REPO_ROOT/deploy/local-cluster/versions.env"
# shellcheck source=versions.env
. "$KIND_SCRIPTS/versions.env"

export PATH="/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin:$PATH"

K8S_BIN=$DRAINWATCH_K8S_CACHE/$K8S_VERSION/bin
ETCD_BIN=$DRAINWATCH_K8S_CACHE/etcd-$ETCD_VERSION/bin
KC=$DRAINWATCH_KIND_CACHE
KIND_BIN_DIR=$KC/bin                      # kind, the docker shim
NODE_BIN=$KC/node-bin                     # kubeadm, crictl, coredns, local-path, flannel
BUILD=$KC/build                           # rootfs archives, component image archives
KIND_KUBECONFIG=$DRAINWATCH_KIND_DIR/kubeconfig
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
export GOPATH=$KC/go GOMODCACHE=$KC/go/mod GOCACHE=$KC/go/build

# podman as kind's engine on this kind of machine: a containers.conf of kind's own (rlimits that
# runc can set without CAP_SYS_RESOURCE, cgroupfs and file events without systemd on the host).
export CONTAINERS_CONF=$KC/containers.conf
export KIND_EXPERIMENTAL_PROVIDER=podman
export PATH="$KIND_BIN_DIR:$PATH"

T0=${T0:-$(date +%s.%N)}
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
log()  { printf '[kind %6ss] %s\n' "$(elapsed)" "$*"; }
die()  { printf '[kind %6ss] ERROR: %s\n' "$(elapsed)" "$*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "run as root (podman's rootful kind nodes)"; }
kindctl() { "$K8S_BIN/kubectl" --kubeconfig "$KIND_KUBECONFIG" "$@"; }

# Serialises every script that builds or changes the kind cluster (a second `make kind-up` waits).
kind_lock() {
  mkdir -p "$KC"
  exec 8>"$KC/.lock"
  flock 8
}
