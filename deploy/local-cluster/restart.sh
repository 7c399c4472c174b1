#!/usr/bin/env bash
# Stops and starts one component of the running local cluster, with the exact arguments up.sh
# gave it, for the fault tests (tests/k8s_faults.rs): a kube-apiserver restarted in the middle of
# a trial, a node whose kubelet stops.
#
#   restart.sh [restart] COMPONENT   stop it, start it again, wait until it is healthy
#   restart.sh stop COMPONENT        stop it (its command line is kept for `start`)
#   restart.sh start COMPONENT       start it again from the kept command line, wait until healthy
#
# COMPONENT: kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy (kube-proxy-nodeN
# when nodes are network hosts), kubelet-nodeN. A component started in a node's network namespace
# starts in it again.
# The command line is read from the running process (/proc/PID/cmdline), never rebuilt, so it
# is the one up.sh started; it is kept in $PIDS/COMPONENT.cmdline while the component is down.
# A stopped kubelet leaves its node's containers running under containerd (as a crashed kubelet
# does); the node turns NotReady after the controller manager's node-monitor grace period.
# The health waits are up.sh's: /readyz for the API server, /healthz and node Ready for a kubelet.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

usage() { die "usage: $0 [restart|stop|start] kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy|kube-proxy-nodeN|kubelet-nodeN"; }
case $# in
  1) action=restart; name=$1 ;;
  2) action=$1; name=$2 ;;
  *) usage ;;
esac
case $action in restart|stop|start) ;; *) usage ;; esac
case $name in
  kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy) ;;
  kubelet-node[1-9]|kube-proxy-node[1-9]) ;;
  *) usage ;;
esac
kept=$PIDS/$name.cmdline
[ -d "$PIDS" ] || die "no cluster state in $S (is the cluster up?)"

healthy() {
  case $name in
    kube-apiserver) wait_for kube-apiserver kube-apiserver 120 apiserver_readyz ;;
    kube-controller-manager) wait_for "$name" "$name" 60 curl -fsSk --max-time 2 https://127.0.0.1:10257/healthz ;;
    kube-scheduler) wait_for "$name" "$name" 60 curl -fsSk --max-time 2 https://127.0.0.1:10259/healthz ;;
    kube-proxy) wait_for "$name" "$name" 60 curl -fsS --max-time 1 http://127.0.0.1:10256/healthz ;;
    kube-proxy-node*) wait_for "$name" "$name" 60 in_node "${name#kube-proxy-node}" curl -fsS --max-time 1 http://127.0.0.1:10256/healthz ;;
    kubelet-node*)
      local n=${name#kubelet-node}
      wait_for "$name healthz" "$name" 60 curl -fsS --max-time 1 "http://$(node_ip "$n"):10248/healthz"
      wait_for "node node$n" "$name" 120 node_ready "$n" ;;
  esac
}

stop() {
  alive "$name" || die "$name is not running (no live process recorded in $PIDS/$name)"
  local pid; pid=$(pid_of "$name")
  # NUL-separated argv, kept before the process goes
  cp "/proc/$pid/cmdline" "$kept.tmp" && mv "$kept.tmp" "$kept"
  if [ -f "$PIDS/$name.netns" ]; then cp "$PIDS/$name.netns" "$kept.netns"; else rm -f "$kept.netns"; fi
  kill -TERM "$pid"
  local deadline=$(( $(date +%s) + 30 ))
  while alive "$name"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      warn "$name (pid $pid) still running 30s after SIGTERM; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$(( $(date +%s) + 10 ))
    fi
    sleep 0.2
  done
  log "$name stopped (pid $pid); its command line is kept in $kept"
}

start() {
  alive "$name" && die "$name is running already (pid $(pid_of "$name"))"
  [ -s "$kept" ] || die "no kept command line for $name ($kept): stop it with this script first"
  local -a argv
  mapfile -d '' -t argv < "$kept"
  [ "${#argv[@]}" -gt 0 ] || die "$kept is empty"
  local ns; ns=$(cat "$kept.netns" 2>/dev/null || true)
  START_NETNS=$ns start_bg "$name" "${argv[@]}"
  log "$name started (pid $(pid_of "$name"))${ns:+ in network namespace $ns}"
  healthy
  rm -f "$kept" "$kept.netns"
}

cluster_lock
case $action in
  stop) stop ;;
  start) start ;;
  restart) stop; start ;;
esac
