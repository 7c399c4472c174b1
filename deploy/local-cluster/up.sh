#!/usr/bin/env bash
# `make cluster-up`: a real Kubernetes cluster of NODES nodes (default 2) as plain processes on this
# machine: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, one containerd + kubelet
# per node, each node a network host of its own with its own kube-proxy (NODE_NETNS=0: the nodes
# share the host's network and one kube-proxy). See README.md beside this file.
#
#   NODES=1|2|3|4        number of nodes (node N: IP 10.10.0.N, pods 10.244.(N-1).0/24)
#   NODE_NETNS=1|0       1 (default): node N in network namespace dwnodeN (veth into bridge dwnodes,
#                        the control plane on 10.10.0.254) with its own containerd, kubelet and
#                        kube-proxy, KUBE_PROXY_MODE_NODEn / KUBE_PROXY_MIN_SYNC_PERIOD_NODEn per
#                        node; 0: every node in the host's network, node IPs on lo, one kube-proxy
#   KUBECONFIG_OUT=path  also copy the admin kubeconfig there (nothing is written to ~/.kube otherwise)
#   SKIP_IMAGE=1         do not build the project image when its archive is missing
#
# Idempotent: when the cluster is already up and healthy with the same node count it only
# re-imports the images; leftovers of a crashed or partial run are torn down first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
NODES=${NODES:-2}
[[ "$NODES" =~ ^[1-9]$ ]] && [ "$NODES" -le "$MAX_NODES" ] || die "NODES must be 1..$MAX_NODES (got '$NODES')"
KLOG_V=${KLOG_V:-1}
WAIT_S=${WAIT_S:-90}

COMPONENTS_CP="etcd kube-apiserver kube-controller-manager kube-scheduler"
components() {
  echo "$COMPONENTS_CP"
  netns_mode || echo kube-proxy
  for n in $(seq 1 "$NODES"); do
    echo "containerd-node$n kubelet-node$n"
    if netns_mode; then proxy_name "$n"; fi
  done
}
for n in $(seq 1 "$NODES"); do
  case $(proxy_mode "$n") in
    iptables|nftables) ;;
    # IPVS is a kernel feature: compiled in, it shows /proc/net/ip_vs (without module support
    # nothing can load it). Refused here rather than left to kube-proxy's fallback.
    ipvs) [ -e /proc/net/ip_vs ] || die "kube-proxy mode ipvs (node$n) needs IP Virtual Server in the kernel; this kernel ($(uname -r)) has none: /proc/net/ip_vs is missing$(zcat /proc/config.gz 2>/dev/null | grep -E '^# CONFIG_(IP_VS|MODULES) is not set' | sed 's/^/; /' | tr -d '\n'). Use iptables or nftables";;
    *) die "kube-proxy mode of node$n must be iptables, nftables or ipvs (got '$(proxy_mode "$n")')";;
  esac
  if [ "$NODE_NETNS" != 1 ] && { [ "$(proxy_mode "$n")" != "$KUBE_PROXY_MODE" ] || [ "$(proxy_min_sync "$n")" != "$KUBE_PROXY_MIN_SYNC_PERIOD" ]; }; then
    die "per-node kube-proxy settings need NODE_NETNS=1 (nodes sharing the host's network have one kube-proxy)"
  fi
done

# ------------------------------------------------------------------------------------------------
# 0. prerequisites: packages, binaries (built when missing), images
"$LC_DIR/install-deps.sh" >/dev/null
if ! "$LC_DIR/build.sh" --check; then
  log "Kubernetes $K8S_VERSION / etcd $ETCD_VERSION not cached: building (cold build ~11 min on 2 quiet cores)"
  "$LC_DIR/build.sh" || die "build failed"
fi
"$LC_DIR/mkpause.sh" >/dev/null || die "pause image build failed"
APP_IMAGE=$(project_image)
APP_ARCHIVE=$(image_archive)
if [ ! -f "$APP_ARCHIVE" ]; then
  if [ "${SKIP_IMAGE:-0}" = 1 ]; then warn "no project image archive $APP_ARCHIVE; continuing without it"
  else log "project image archive missing; running image.sh"; "$LC_DIR/image.sh"; fi
elif [ "${SKIP_IMAGE:-0}" != 1 ] && [ "$(cat "$APP_ARCHIVE.revision" 2>/dev/null)" != "$(image_stamp)" ]; then
  log "project image archive was built from $(cat "$APP_ARCHIVE.revision" 2>/dev/null || echo 'an unknown revision'), this checkout and profile are $(image_stamp); rebuilding"
  "$LC_DIR/image.sh"
fi

import_images() { # node
  local n=$1 a
  for a in "$PAUSE_ARCHIVE" "$APP_ARCHIVE"; do
    [ -f "$a" ] || continue
    ctr_node "$n" images import --platform linux/amd64 "$a" >/dev/null \
      || die "importing $a into node$n's containerd failed (log: $L/containerd-node$n.log)"
  done
  ctr_node "$n" images ls -q | grep -xF "$PAUSE_IMAGE" >/dev/null || die "node$n: $PAUSE_IMAGE not present after import"
  if [ -f "$APP_ARCHIVE" ]; then
    ctr_node "$n" images ls -q | grep -xF "$APP_IMAGE" >/dev/null || die "node$n: $APP_IMAGE not present after import"
  fi
}

node_ns() { if netns_mode; then node_netns "$1"; fi; }
# Each node's kube-proxy mode and min-sync-period, as recorded (a change rebuilds the cluster).
proxies() { for n in $(seq 1 "$NODES"); do printf 'node%s=%s/%s ' "$n" "$(proxy_mode "$n")" "$(proxy_min_sync "$n")"; done; }

cluster_lock
# ------------------------------------------------------------------------------------------------
# 1. already up? then only refresh the images. Partial or crashed? then clean up first.
healthy() {
  [ -f "$S/nodes" ] && [ "$(cat "$S/nodes")" = "$NODES" ] || return 1
  [ "$(cat "$S/netns" 2>/dev/null || echo 0)" = "$NODE_NETNS" ] || return 1
  [ "$(cat "$S/proxies" 2>/dev/null)" = "$(proxies)" ] || return 1
  local c; for c in $(components); do alive "$c" || return 1; done
  iptables -t mangle -C POSTROUTING -j DRAINWATCH-EGRESS -m comment --comment "$GUARD_COMMENT" 2>/dev/null || return 1
  curl -fsS --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://$(api_ip):$APISERVER_PORT/readyz" >/dev/null 2>&1
}
export_kubeconfig() {
  if [ -n "${KUBECONFIG_OUT:-}" ]; then
    mkdir -p "$(dirname "$KUBECONFIG_OUT")"
    install -m 600 "$ADMIN_KUBECONFIG" "$KUBECONFIG_OUT"
    log "admin kubeconfig copied to $KUBECONFIG_OUT"
  fi
}
if healthy; then
  log "cluster already up ($NODES nodes); re-importing images"
  for n in $(seq 1 "$NODES"); do import_images "$n"; done
  export_kubeconfig
  log "admin kubeconfig: $ADMIN_KUBECONFIG"
  exit 0
fi
if [ -d "$S" ] || [ -d "$R" ] || ip -4 addr show dev lo | grep "inet ${NODE_IP_PREFIX}" >/dev/null \
   || ip netns list 2>/dev/null | grep -q "^$NETNS_PREFIX[0-9]" || ip link show "$HOST_BRIDGE" >/dev/null 2>&1; then
  log "leftovers of an earlier run found; tearing them down first"
  "$LC_DIR/down.sh" | sed 's/^/    down: /'
fi
if iptables -t nat -S 2>/dev/null | grep -- '-N KUBE-SERVICES' >/dev/null && [ "${FORCE:-0}" != 1 ]; then
  die "KUBE-SERVICES chain exists but no drainwatch cluster state: another Kubernetes runs here? (FORCE=1 to ignore)"
fi

T0=$(date +%s.%N)
log "bringing up $NODES node(s): Kubernetes $K8S_VERSION, etcd $ETCD_VERSION; state $S"
mkdir -p "$S" "$PKI" "$PIDS" "$L" "$R"
echo "$NODES" > "$S/nodes"
echo "$NODE_NETNS" > "$S/netns"
proxies > "$S/proxies"

# ------------------------------------------------------------------------------------------------
# 2. host setup: what the machine looked like, sysctls, node IPs, egress guard, cgroup roots
# Record what existed before (teardown removes only what we added and restores the sysctls).
{
  for p in /var/lib/cni /var/lib/kubelet /var/log/containers /var/log/pods /run/netns /run/containerd; do
    [ -e "$p" ] && echo "path $p"
  done
  ip netns list 2>/dev/null | awk '{print "netns " $1}'
} > "$S/host-before.txt"
SYSCTLS="net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.ipv4.conf.all.route_localnet
  fs.inotify.max_user_instances fs.inotify.max_user_watches vm.overcommit_memory vm.panic_on_oom
  kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
for k in $SYSCTLS; do v=$(sysctl -n "$k" 2>/dev/null) && echo "$k=$v"; done > "$S/sysctl-before.txt"
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 \
  fs.inotify.max_user_instances=1024 fs.inotify.max_user_watches=524288

if netns_mode; then
  "$LC_DIR/nodes-netns.sh" up "$NODES" || die "node network namespaces failed"
else
  for n in $(seq 1 "$NODES"); do
    ip -4 addr show dev lo | grep "inet $(node_ip "$n")/32" >/dev/null || ip addr add "$(node_ip "$n")/32" dev lo
  done
fi

# Egress guard, before any pod can exist. In mangle POSTROUTING, where the egress device is the
# real one after kube-proxy's DNAT (in filter OUTPUT host->ClusterIP traffic would still carry the
# pre-DNAT device and be dropped). Only the cluster's own ranges: never all of 10/8, the machine's
# DNS resolver may live there.
GUARDED="$SERVICE_CIDR $POD_CIDR $NODE_NET"
in_cidr() { python3 -c 'import ipaddress,sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }
for ns in $(awk '$1=="nameserver"{print $2}' /etc/resolv.conf 2>/dev/null); do
  for c in $GUARDED; do
    in_cidr "$ns" "$c" && die "nameserver $ns from /etc/resolv.conf lies in cluster range $c; choose other ranges in versions.env"
  done
done
EGRESS_DEV=$(ip -4 route show default | awk '{for(i=1;i<NF;i++) if($i=="dev"){print $(i+1); exit}}')
G=DRAINWATCH-EGRESS
iptables -t mangle -N $G 2>/dev/null || iptables -t mangle -F $G
if [ -n "$EGRESS_DEV" ]; then
  for c in $GUARDED; do
    iptables -t mangle -A $G -o "$EGRESS_DEV" -d "$c" -j DROP -m comment --comment "$GUARD_COMMENT: to $c via default route"
  done
else
  warn "no IPv4 default route: nothing can leave through it; guarding the pod source range only"
fi
iptables -t mangle -A $G -s "$POD_CIDR" -o lo -j RETURN
iptables -t mangle -A $G -s "$POD_CIDR" -o "${BRIDGE_PREFIX}+" -j RETURN
if netns_mode; then iptables -t mangle -A $G -s "$POD_CIDR" -o "$HOST_BRIDGE" -j RETURN; fi
iptables -t mangle -A $G -s "$POD_CIDR" -j DROP -m comment --comment "$GUARD_COMMENT: pod range leaving the cluster"
iptables -t mangle -C POSTROUTING -j $G -m comment --comment "$GUARD_COMMENT" 2>/dev/null \
  || iptables -t mangle -I POSTROUTING 1 -j $G -m comment --comment "$GUARD_COMMENT"
log "egress guard installed (mangle POSTROUTING -> $G; default-route device ${EGRESS_DEV:-none})"
if netns_mode; then
  for n in $(seq 1 "$NODES"); do "$LC_DIR/nodes-netns.sh" guard "$n" || die "node$n's egress guard failed"; done
  log "egress guard installed in every node's namespace"
fi

# cgroup roots: each kubelet needs its own, present in every v1 hierarchy (cgroup2 here only
# carries hugetlb and is skipped by the kubelet on this hybrid host).
for n in $(seq 1 "$NODES"); do
  cg=/sys/fs/cgroup/cpuset/${CGROUP_PREFIX}node$n
  for h in /sys/fs/cgroup/*/; do [ "$(stat -f -c %T "$h")" = cgroup2fs ] || mkdir -p "$h${CGROUP_PREFIX}node$n"; done
  if [ -d "$cg" ]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus > "$cg/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems > "$cg/cpuset.mems"
  fi
done
log "host prepared (sysctls, node IPs, cgroup roots)"

# ------------------------------------------------------------------------------------------------
# 3. PKI (openssl, ECDSA P-256) and kubeconfigs
(
  cd "$PKI"
  key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }
  key ca
  openssl req -x509 -new -key ca.key -sha256 -days 3650 -out ca.crt -subj "/CN=drainwatch-testbed-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,digitalSignature,keyCertSign,cRLSign" 2>/dev/null
  leaf() { # name CN O extensions
    key "$1"
    openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2${3:+/O=$3}" 2>/dev/null
    printf '%b' "$4" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
      -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
  }
  client='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n'
  san="DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$SERVICE_FIRST_IP,IP:$CP_IP"
  for n in $(seq 1 "$NODES"); do san="$san,IP:$(node_ip "$n")"; done
  leaf apiserver kube-apiserver "" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=$san\n"
  leaf admin admin system:masters "$client"
  leaf apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "$client"
  leaf controller-manager system:kube-controller-manager "" "$client"
  leaf scheduler system:kube-scheduler "" "$client"
  leaf kube-proxy system:kube-proxy "" "$client"
  for n in $(seq 1 "$NODES"); do leaf "kubelet-node$n" "system:node:node$n" system:nodes "$client"; done
  key sa
  openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
  chmod 600 ./*.key
)
kubeconfig() { # name
  cat > "$S/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: drainwatch-testbed
  cluster:
    server: https://$(api_ip):$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$1.crt")
    client-key-data: $(base64 -w0 "$PKI/$1.key")
contexts:
- name: drainwatch-testbed
  context: {cluster: drainwatch-testbed, user: $1}
current-context: drainwatch-testbed
EOF
  chmod 600 "$S/$1.kubeconfig"
}
for k in admin controller-manager scheduler kube-proxy; do kubeconfig "$k"; done
for n in $(seq 1 "$NODES"); do kubeconfig "kubelet-node$n"; done
log "PKI and kubeconfigs written"

# ------------------------------------------------------------------------------------------------
# 4. per-node containerd and CNI configs
for n in $(seq 1 "$NODES"); do
  mkdir -p "$S/cni-node$n" "$S/containerd-node$n" "$R/containerd-node$n" "$L/pods-node$n"
  cat > "$S/containerd-node$n.toml" <<EOF
version = 2
root = "$S/containerd-node$n"
state = "$R/containerd-node$n"
# the opt plugin would create /opt/containerd; the extra snapshotters only add noise here
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$(node_sock "$n")"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # this machine lacks CAP_SYS_RESOURCE: without it runc fails on oom_score_adj -998 for sandboxes
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "$R/runc-node$n"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$S/cni-node$n"
    max_conf_num = 1
EOF
  # Routes in pods: only the cluster's own ranges (no default route, no masquerade, no DNS).
  cat > "$S/cni-node$n/10-drainwatch.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NET_PREFIX$n",
  "plugins": [
    {
      "type": "bridge", "bridge": "$(node_bridge "$n")", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$S/cni-ipam",
        "ranges": [[{"subnet": "$(node_subnet "$n")"}]],
        "routes": [{"dst": "$SERVICE_CIDR"}, {"dst": "$POD_CIDR"}, {"dst": "$NODE_NET"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
done

# ------------------------------------------------------------------------------------------------
# 5. start: etcd and the containerds first (independent), then the apiserver
APISERVER_URL=https://$(api_ip):$APISERVER_PORT
start_bg etcd "$ETCD_BIN/etcd" --name drainwatch --data-dir "$S/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster drainwatch=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
  --unsafe-no-fsync --log-level warn
for n in $(seq 1 "$NODES"); do
  START_NETNS=$(node_ns "$n") start_bg "containerd-node$n" containerd --config "$S/containerd-node$n.toml"
done
wait_for etcd etcd 30 curl -fsS --max-time 1 http://127.0.0.1:2379/readyz

start_bg kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers=http://127.0.0.1:2379 \
  --bind-address="$(api_ip)" --secure-port="$APISERVER_PORT" --advertise-address="$(api_ip)" \
  --service-cluster-ip-range="$SERVICE_CIDR" --service-node-port-range="$NODEPORT_RANGE" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --default-not-ready-toleration-seconds="$DEFAULT_TOLERATION_SECONDS" \
  --default-unreachable-toleration-seconds="$DEFAULT_TOLERATION_SECONDS" \
  --allow-privileged=true --profiling=false --v="$KLOG_V"

# while the apiserver starts: containerds ready, images imported
for n in $(seq 1 "$NODES"); do
  wait_for "containerd-node$n" "containerd-node$n" 30 ctr_node "$n" version
  import_images "$n"
done
log "images imported into $NODES node(s): $PAUSE_IMAGE${APP_ARCHIVE:+ $( [ -f "$APP_ARCHIVE" ] && echo "$APP_IMAGE")}"

wait_for kube-apiserver kube-apiserver "$WAIT_S" apiserver_readyz

# ------------------------------------------------------------------------------------------------
# 6. controller-manager, scheduler, kubelets, kube-proxy
start_bg kube-controller-manager "$K8S_BIN/kube-controller-manager" \
  --kubeconfig="$S/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$S/controller-manager.kubeconfig" --authorization-kubeconfig="$S/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --use-service-account-credentials=true --controllers='*' \
  --allocate-node-cidrs=false --cluster-cidr="$POD_CIDR" --service-cluster-ip-range="$SERVICE_CIDR" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --endpointslice-updates-batch-period="$ENDPOINTSLICE_BATCH_PERIOD" \
  --concurrent-service-endpoint-syncs="$CONCURRENT_SERVICE_ENDPOINT_SYNCS" \
  --node-monitor-grace-period="$NODE_MONITOR_GRACE_PERIOD" \
  --profiling=false --v="$KLOG_V"
start_bg kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$S/scheduler.kubeconfig" \
  --authentication-kubeconfig="$S/scheduler.kubeconfig" --authorization-kubeconfig="$S/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --profiling=false --v="$KLOG_V"

for n in $(seq 1 "$NODES"); do
  ip=$(node_ip "$n")
  cat > "$S/kubelet-node$n.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$(node_sock "$n")
cgroupDriver: cgroupfs            # no systemd here; containerd 1.6 lacks RuntimeConfig, kubelet falls back to this
cgroupRoot: /${CGROUP_PREFIX}node$n   # own root per kubelet: two kubelets under one kubepods kill each other's pods
cgroupsPerQOS: true
failCgroupV1: false               # this host is cgroup v1 (hybrid)
failSwapOn: false
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: $ip
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
resolvConf: ""                    # no DNS: pods get no nameservers
podLogsDir: $L/pods-node$n
imageGCHighThresholdPercent: 100  # never GC images: there is no registry to pull them back from
evictionHard: {memory.available: "100Mi", nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%"}
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
shutdownGracePeriod: 0s           # needs systemd-logind
nodeStatusUpdateFrequency: $NODE_STATUS_UPDATE_FREQUENCY
nodeStatusReportFrequency: $NODE_STATUS_REPORT_FREQUENCY
EOF
  START_NETNS=$(node_ns "$n") start_bg "kubelet-node$n" "$K8S_BIN/kubelet" --config="$S/kubelet-node$n.yaml" \
    --kubeconfig="$S/kubelet-node$n.kubeconfig" --hostname-override="node$n" --node-ip="$ip" \
    --root-dir="$S/kubelet-node$n" --cert-dir="$S/kubelet-node$n/pki" --v="$KLOG_V"
done

# kube-proxy: one per node in its namespace (NODE_NETNS=1), else one as node1 for the shared one.
proxy_config() { # N FILE
  local n=$1 mode; mode=$(proxy_mode "$1")
  cat > "$2" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $S/kube-proxy.kubeconfig}
hostnameOverride: node$n
bindAddress: 0.0.0.0
mode: $mode
clusterCIDR: $POD_CIDR
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts only on the node IPs and loopback, never on the machine's own interfaces
nodePortAddresses: ["$NODE_NET", "127.0.0.0/8"]
$mode: {minSyncPeriod: $(proxy_min_sync "$n"), syncPeriod: $KUBE_PROXY_SYNC_PERIOD}
# every conntrack setting 0: kube-proxy leaves the machine's conntrack sysctls alone
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}
if netns_mode; then
  for n in $(seq 1 "$NODES"); do
    proxy_config "$n" "$S/kube-proxy-node$n.yaml"
    START_NETNS=$(node_netns "$n") start_bg "kube-proxy-node$n" "$K8S_BIN/kube-proxy" --config="$S/kube-proxy-node$n.yaml" --v="$KLOG_V"
  done
else
  proxy_config 1 "$S/kube-proxy.yaml"
  start_bg kube-proxy "$K8S_BIN/kube-proxy" --config="$S/kube-proxy.yaml" --v="$KLOG_V"
fi

# ------------------------------------------------------------------------------------------------
# 7. readiness
https_ok() { curl -fsSk --max-time 2 "$1"; }
wait_for kube-controller-manager kube-controller-manager 60 https_ok https://127.0.0.1:10257/healthz
wait_for kube-scheduler kube-scheduler 60 https_ok https://127.0.0.1:10259/healthz
for n in $(seq 1 "$NODES"); do
  wait_for "kubelet-node$n healthz" "kubelet-node$n" 60 curl -fsS --max-time 1 "http://$(node_ip "$n"):10248/healthz"
done
for n in $(seq 1 "$NODES"); do
  wait_for "node node$n" "kubelet-node$n" "$WAIT_S" node_ready "$n"
done
for n in $(seq 1 "$(if netns_mode; then echo "$NODES"; else echo 1; fi)"); do
  wait_for "$(proxy_name "$n")" "$(proxy_name "$n")" 60 in_node "$n" curl -fsS --max-time 1 http://127.0.0.1:10256/healthz
done
wait_for "ServiceAccount default/default" kube-controller-manager 60 kc get serviceaccount default -n default
wait_for "ConfigMap default/kube-root-ca.crt" kube-controller-manager 60 kc get configmap kube-root-ca.crt -n default
UP_SECONDS=$(elapsed)

# ------------------------------------------------------------------------------------------------
# 8. cluster-info.json: what a report needs to record about this cluster
# One mode / period when every node has the same, else each node's ("node1=iptables node2=nftables").
summary() { # proxy_mode|proxy_min_sync
  local n all=""
  for n in $(seq 1 "$NODES"); do all="$all${all:+ }node$n=$("$1" "$n")"; done
  if [ "$(for n in $(seq 1 "$NODES"); do "$1" "$n"; done | sort -u | wc -l)" = 1 ]; then "$1" 1; else echo "$all"; fi
}
PROXY_MODE_SUMMARY=$(summary proxy_mode)
PROXY_MIN_SYNC_SUMMARY=$(summary proxy_min_sync)
node_json=""
for n in $(seq 1 "$NODES"); do
  node_json="$node_json${node_json:+,}
    {\"name\": \"node$n\", \"ip\": \"$(node_ip "$n")\", \"podCIDR\": \"$(node_subnet "$n")\", \"bridge\": \"$(node_bridge "$n")\", \"containerdSocket\": \"$(node_sock "$n")\", \"cgroupRoot\": \"/${CGROUP_PREFIX}node$n\", \"netns\": $(if netns_mode; then echo "\"$(node_netns "$n")\""; else echo null; fi), \"kubeProxy\": {\"mode\": \"$(proxy_mode "$n")\", \"minSyncPeriod\": \"$(proxy_min_sync "$n")\"}}"
done
cat > "$CLUSTER_INFO" <<EOF
{
  "kind": "drainwatch-local-cluster",
  "kubernetesVersion": "$K8S_VERSION",
  "etcdVersion": "$ETCD_VERSION",
  "containerdVersion": "$(containerd --version | awk '{print $3}')",
  "runcVersion": "$(runc --version | awk 'NR==1{print $3}')",
  "apiserver": "$APISERVER_URL",
  "kubeconfig": "$ADMIN_KUBECONFIG",
  "createdAt": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "bringUpSeconds": $UP_SECONDS,
  "nodes": [$node_json
  ],
  "serviceCIDR": "$SERVICE_CIDR",
  "podCIDR": "$POD_CIDR",
  "nodeCIDR": "$NODE_NET",
  "nodePortRange": "$NODEPORT_RANGE",
  "nodeNetworks": "$(if netns_mode; then echo "netns: one network namespace per node, veth into bridge $HOST_BRIDGE, the control plane on $CP_IP"; else echo "host: every node in the host's network namespace, node IPs on lo"; fi)",
  "kubeProxy": {"mode": "$PROXY_MODE_SUMMARY", "instances": $(if netns_mode; then echo "$NODES"; else echo 1; fi), "hostname": $(if netns_mode; then echo null; else echo '"node1"'; fi)},
  "images": {"app": "$APP_IMAGE", "pause": "$PAUSE_IMAGE", "pullPolicy": "Never"},
  "egressGuard": {"table": "mangle", "chain": "DRAINWATCH-EGRESS", "hook": "POSTROUTING", "defaultRouteDevice": "${EGRESS_DEV}", "guardedRanges": ["$SERVICE_CIDR", "$POD_CIDR", "$NODE_NET"]},
  "timing": {
    "endpointSliceUpdatesBatchPeriod": "$ENDPOINTSLICE_BATCH_PERIOD",
    "concurrentServiceEndpointSyncs": $CONCURRENT_SERVICE_ENDPOINT_SYNCS,
    "kubeProxyMinSyncPeriod": "$PROXY_MIN_SYNC_SUMMARY",
    "kubeProxySyncPeriod": "$KUBE_PROXY_SYNC_PERIOD",
    "nodeStatusUpdateFrequency": "$NODE_STATUS_UPDATE_FREQUENCY",
    "nodeStatusReportFrequency": "$NODE_STATUS_REPORT_FREQUENCY",
    "nodeMonitorGracePeriod": "$NODE_MONITOR_GRACE_PERIOD",
    "defaultNotReadyTolerationSeconds": $DEFAULT_TOLERATION_SECONDS,
    "defaultUnreachableTolerationSeconds": $DEFAULT_TOLERATION_SECONDS
  }
}
EOF
python3 -m json.tool "$CLUSTER_INFO" >/dev/null || die "cluster-info.json is not valid JSON"

export_kubeconfig
log "cluster up: $NODES node(s) Ready in ${UP_SECONDS}s"
log "admin kubeconfig: $ADMIN_KUBECONFIG"
log "cluster info:     $CLUSTER_INFO"
log "use: export KUBECONFIG=$ADMIN_KUBECONFIG; $K8S_BIN/kubectl get nodes"
