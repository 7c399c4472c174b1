# Common definitions for the local testbed scripts. Sourced, not executed.
# shellcheck shell=bash
LC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$LC_DIR/../.." && pwd)
# shellcheck source=versions.env
. "$LC_DIR/versions.env"

export PATH="/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin:$PATH"

# --- derived paths -------------------------------------------------------------------------
K8S_BIN=$DRAINWATCH_K8S_CACHE/$K8S_VERSION/bin
ETCD_BIN=$DRAINWATCH_K8S_CACHE/etcd-$ETCD_VERSION/bin
IMAGES_DIR=$DRAINWATCH_K8S_CACHE/images
GO_CACHE_ROOT=$DRAINWATCH_K8S_CACHE/go           # GOMODCACHE and GOCACHE for the builds
S=$DRAINWATCH_CLUSTER_DIR                        # state root
PKI=$S/pki
PIDS=$S/pids
L=$DRAINWATCH_CLUSTER_LOG
R=$DRAINWATCH_CLUSTER_RUN
ADMIN_KUBECONFIG=$S/admin.kubeconfig
CLUSTER_INFO=$S/cluster-info.json
MAX_NODES=4                                      # teardown sweeps node1..node$MAX_NODES
GUARD_COMMENT="drainwatch-cluster egress guard"
CGROUP_PREFIX=drainwatch-
BRIDGE_PREFIX=dwcni
CNI_NET_PREFIX=drainwatch-node

NETNS_PREFIX=dwnode                              # node N's network namespace (NODE_NETNS=1)
HOST_BRIDGE=dwnodes                              # the host's bridge every node's veth is on
node_ip()      { echo "${NODE_IP_PREFIX}$1"; }
node_subnet()  { echo "${POD_SUBNET_PREFIX}$(( $1 - 1 )).0/24"; }
node_bridge()  { echo "${BRIDGE_PREFIX}$(( $1 - 1 ))"; }
node_sock()    { echo "$R/containerd-node$1.sock"; }
ctr_node()     { ctr --address "$(node_sock "$1")" -n k8s.io "${@:2}"; }
node_netns()   { echo "${NETNS_PREFIX}$1"; }
node_veth()    { echo "dwveth$1"; }              # the host end of node N's veth
# Whether the running (or starting) cluster's nodes are network hosts: what bring-up recorded,
# else what is asked.
netns_mode()   { if [ -f "$S/netns" ]; then [ "$(cat "$S/netns")" = 1 ]; else [ "$NODE_NETNS" = 1 ]; fi; }
# in_node N CMD...: CMD in node N's network namespace (only the network: mounts stay shared, so
# the kubelet's volume mounts are the containerd's), or here when nodes share the host's.
in_node()      { local n=$1; shift; if netns_mode; then nsenter --net="/run/netns/$(node_netns "$n")" "$@"; else "$@"; fi; }
# The API server's address: node1's IP on lo, or the host's address on the node bridge.
api_ip()       { if netns_mode; then echo "$CP_IP"; else node_ip 1; fi; }
# kube-proxy's component name for node N: one per node with NODE_NETNS=1, else the one.
proxy_name()   { if netns_mode; then echo "kube-proxy-node$1"; else echo kube-proxy; fi; }
proxy_mode()   { local v="KUBE_PROXY_MODE_NODE$1"; echo "${!v:-$KUBE_PROXY_MODE}"; }
proxy_min_sync() { local v="KUBE_PROXY_MIN_SYNC_PERIOD_NODE$1"; echo "${!v:-$KUBE_PROXY_MIN_SYNC_PERIOD}"; }
# kubectl as cluster admin; its discovery cache stays in the state dir (nothing lands in ~/.kube)
kc()           { "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" --cache-dir "$S/kubectl-cache" "$@"; }

# --- output --------------------------------------------------------------------------------
T0=${T0:-$(date +%s.%N)}
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
log()  { printf '[%6ss] %s\n' "$(elapsed)" "$*"; }
warn() { printf '[%6ss] WARNING: %s\n' "$(elapsed)" "$*" >&2; }
die()  { printf '[%6ss] ERROR: %s\n' "$(elapsed)" "$*" >&2; exit 1; }

# One cluster per machine, shared by every checkout: cluster-up and cluster-down serialize on a lock
# (a second cluster-up waits, then finds the cluster up). A script run by a lock holder inherits it.
LOCK_FILE=/run/lock/drainwatch-cluster.lock
cluster_lock() {
  [ "${DRAINWATCH_CLUSTER_LOCKED:-}" = 1 ] && return 0
  [ -d "${LOCK_FILE%/*}" ] || LOCK_FILE=/tmp/drainwatch-cluster.lock
  exec 8>"$LOCK_FILE"
  if ! flock -n 8; then
    log "another cluster-up/cluster-down is running (lock $LOCK_FILE); waiting up to ${LOCK_WAIT_S:-600}s"
    flock -w "${LOCK_WAIT_S:-600}" 8 || die "timed out waiting for $LOCK_FILE"
  fi
  export DRAINWATCH_CLUSTER_LOCKED=1
}

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (it changes network, cgroups and mounts)"; }

# Image name: repository + crate version from Cargo.toml (never :latest).
crate_version() {
  sed -n '/^\[package\]/,/^\[/{s/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p}' "$REPO_ROOT/Cargo.toml" | head -1
}
# The release's tag (v<version>, as .github/workflows/release.yml pushes it and as drainwatch
# run's default --image names it); the archive carries the tag in its name, so an archive of the
# old tag is never taken for this one.
project_image() { local v; v=$(crate_version); [ -n "$v" ] || die "no version in $REPO_ROOT/Cargo.toml"; echo "$IMAGE_REPO:v$v"; }
image_archive() { echo "$IMAGES_DIR/drainwatch-v$(crate_version).oci.tar"; }
# The commit the project image is built from, "-dirty" when tracked files differ from it. The
# archive's tag is the crate version only, so image.sh writes this beside the archive and up.sh
# rebuilds an archive another checkout or an older commit left behind.
checkout_revision() {
  local r
  r=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null) || { echo unknown; return; }
  if [ -n "$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then r="$r-dirty"; fi
  echo "$r"
}
# The cargo profile of the project's static binary and image: `release` by default,
# DRAINWATCH_IMAGE_PROFILE=test-image in the CI's cluster run (Cargo.toml says why).
image_profile() { echo "${DRAINWATCH_IMAGE_PROFILE:-release}"; }
# What image.sh writes beside the archive and up.sh / example-images.sh compare: the checkout's
# revision and the profile, so an archive of another commit or another profile is never reused.
image_stamp() { echo "$(checkout_revision) $(image_profile)"; }
PAUSE_ARCHIVE=$IMAGES_DIR/pause-oci.tar

# --- process management by recorded PID ----------------------------------------------------
# start_bg NAME CMD... : runs CMD in its own session in the background, logs to $L/NAME.log and
# records its PID (and the executable, so a reused PID is never mistaken for ours).
# With START_NETNS=NAME the command runs in that network namespace (nsenter --net: mounts stay
# shared); the namespace is recorded beside the PID for restart.sh.
start_bg() {
  local name=$1 exe; shift
  mkdir -p "$L" "$PIDS"
  exe=$(readlink -f "$(command -v "$1")") || die "$1 not found"
  local -a pre=()
  if [ -n "${START_NETNS:-}" ]; then
    pre=(nsenter --net="/run/netns/$START_NETNS")
    echo "$START_NETNS" > "$PIDS/$name.netns"
  else
    rm -f "$PIDS/$name.netns"
  fi
  # not a process-group leader (no job control in scripts), so setsid execs in place and $! is CMD
  # (the subshell execs it). Every descriptor above 2 is closed first: fd 8 is the cluster lock,
  # and a caller's own lock (`flock FILE restart.sh …` holds FILE on an inherited descriptor)
  # would be held by the daemon for ever.
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
    done
    DRAINWATCH_CLUSTER_LOCKED='' exec setsid "${pre[@]}" "$@"
  ) >>"$L/$name.log" 2>&1 < /dev/null &
  echo $! > "$PIDS/$name"
  echo "$exe" > "$PIDS/$name.exe"
}
pid_of() { [ -f "$PIDS/$1" ] && cat "$PIDS/$1"; }
# pid_is PID EXE: PID is a live (not zombie) process running EXE
pid_is() {
  local pid=$1 want=$2 exe state
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)}
  [ "$exe" = "$want" ] && return 0
  # between fork and exec our own child still runs setsid
  case $exe in */setsid|*/bash|*/nsenter) [ "$(awk '{print $4}' "/proc/$pid/stat")" = "$$" ];; *) return 1;; esac
}
# alive NAME: the recorded process still runs and is the program we started
alive() {
  [ -f "$PIDS/$1" ] && [ -f "$PIDS/$1.exe" ] || return 1
  pid_is "$(cat "$PIDS/$1")" "$(cat "$PIDS/$1.exe")"
}

# --- readiness waits (never fixed sleeps) --------------------------------------------------
# apiserver_readyz: the API server answers /readyz to the admin's client certificate
apiserver_readyz() {
  curl -fsS --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://$(api_ip):$APISERVER_PORT/readyz"
}
# node_ready N: node N's Ready condition is True
node_ready() {
  [ "$(kc get node "node$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# wait_for WHAT LOGNAME TIMEOUT_S CMD... : polls CMD until it succeeds; on timeout prints what did
# not become ready and the last 30 lines of the component's log, then exits non-zero.
wait_for() {
  local what=$1 logname=$2 timeout=$3; shift 3
  local deadline=$(( $(date +%s) + timeout ))
  while :; do
    if "$@" >/dev/null 2>&1; then log "$what ready"; return 0; fi
    if [ -n "$logname" ] && [ -f "$PIDS/$logname" ] && ! alive "$logname"; then
      fail_wait "$what" "$logname" "process $logname (pid $(pid_of "$logname")) exited"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || fail_wait "$what" "$logname" "not ready after ${timeout}s"
    sleep 0.2
  done
}
fail_wait() {
  local what=$1 logname=$2 why=$3
  printf '[%6ss] NOT READY: %s (%s)\n' "$(elapsed)" "$what" "$why" >&2
  if [ -n "$logname" ] && [ -f "$L/$logname.log" ]; then
    echo "----- last 30 lines of $L/$logname.log -----" >&2
    tail -n 30 "$L/$logname.log" >&2
    echo "-----" >&2
  fi
  exit 1
}
