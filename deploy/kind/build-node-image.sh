#!/usr/bin/env bash
# Builds the kind node image $KIND_NODE_IMAGE here, from what the registries serve: what `kind
# build node-image` does, without a registry.
#   1. binaries: kubeadm (the testbed's Kubernetes build, one command added), crictl, CoreDNS,
#      local-path-provisioner, flanneld and the flannel CNI plugin, from the Go module proxy
#   2. two Debian roots (mmdebstrap): kind's base (systemd, containerd, runc, CNI plugins, with
#      kind's own files from its module) and a small one (iptables, iproute2) under the
#      kube-proxy and flannel images
#   3. the component images kubeadm asks for (apiserver, controller-manager, scheduler, proxy,
#      etcd, CoreDNS, pause) and flannel's and local-path's, preloaded into the node's containerd
#   4. the node: Kubernetes' binaries, /kind/manifests (flannel as the default CNI, local-path as
#      the default storage), committed with kind's entrypoint
# Every step is cached under $DRAINWATCH_KIND_CACHE; the image carries the hash of its inputs and
# is rebuilt only when one changed. build-node-image.sh --check: exit 0 when it is current.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
JOBS=${BUILD_JOBS:-$(nproc)}
mkdir -p "$NODE_BIN" "$BUILD"

# The inputs: these scripts and files, the versions, the Kubernetes and etcd builds, the pause image.
inputs_hash() {
  {
    cat "$KIND_SCRIPTS"/versions.env "$KIND_SCRIPTS"/build-node-image.sh "$KIND_SCRIPTS"/iptables-mode \
      "$KIND_SCRIPTS"/manifests.py "$REPO_ROOT"/deploy/local-cluster/versions.env
    "$K8S_BIN/kubelet" --version; "$ETCD_BIN/etcd" --version | head -1
    cat "$DRAINWATCH_K8S_CACHE/images/pause-oci.tar.stamp"
  } 2>/dev/null | sha256sum | cut -c1-16
}
current() { [ "$(podman image inspect --format '{{ index .Labels "drainwatch.kind.inputs" }}' "$KIND_NODE_IMAGE" 2>/dev/null)" = "$1" ]; }
HASH=$(inputs_hash)
if [ "${1:-}" = --check ]; then current "$HASH"; exit $?; fi
kind_lock
if current "$HASH"; then log "node image $KIND_NODE_IMAGE: current (inputs $HASH)"; exit 0; fi
[ -x "$K8S_BIN/kubelet" ] && [ -x "$ETCD_BIN/etcd" ] || die "no Kubernetes build in $K8S_BIN: deploy/local-cluster/build.sh first (make kind-up does)"
[ -f "$DRAINWATCH_K8S_CACHE/images/pause-oci.tar" ] || die "no pause image: deploy/local-cluster/mkpause.sh first (make kind-up does)"
log "node image $KIND_NODE_IMAGE: building (inputs $HASH)"

# A binary is rebuilt when its recorded version differs: <name>.version beside it.
have() { [ -x "$NODE_BIN/$1" ] && [ "$(cat "$NODE_BIN/$1.version" 2>/dev/null)" = "$2" ]; }
built() { echo "$2" > "$NODE_BIN/$1.version"; log "built $1 $2"; }
module_dir() { (cd / && go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'); }

# --- 1. binaries ----------------------------------------------------------------------------------
build_kubeadm() {
  have kubeadm "$K8S_VERSION" && return 0
  # As deploy/local-cluster/build.sh builds the other commands: its module file, its caches, its
  # version stamp, so that kubeadm is the same Kubernetes as kubelet.
  local src=$DRAINWATCH_K8S_CACHE/$K8S_VERSION/src w=$BUILD/kubeadm minor ld="-s -w" p date
  [ -f "$src/go.mod" ] || die "no $src/go.mod: the testbed's Kubernetes build is missing"
  rm -rf "$w"; mkdir -p "$w"; cp "$src/go.mod" "$src/go.sum" "$w/"
  minor=$(echo "$K8S_VERSION" | cut -d. -f2); date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  (cd "$w" && GOMODCACHE=$DRAINWATCH_K8S_CACHE/go/mod GOCACHE=$DRAINWATCH_K8S_CACHE/go/build \
    go get "k8s.io/kubernetes/cmd/kubeadm@$K8S_VERSION" &&
    GOMODCACHE=$DRAINWATCH_K8S_CACHE/go/mod GOCACHE=$DRAINWATCH_K8S_CACHE/go/build \
    go build -p "$JOBS" -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ld" -o "$NODE_BIN/kubeadm" k8s.io/kubernetes/cmd/kubeadm)
  [ "$("$NODE_BIN/kubeadm" version -o short)" = "$K8S_VERSION" ] || die "kubeadm built but does not report $K8S_VERSION"
  built kubeadm "$K8S_VERSION"
}
go_tool() { # name module@version
  have "$1" "${2#*@}" && return 0
  GOBIN=$NODE_BIN go install -trimpath -ldflags "-s -w" "$2"
  built "$1" "${2#*@}"
}
build_flannel() {
  have flanneld "$FLANNEL_VERSION" && have install-conf "$FLANNEL_VERSION" && return 0
  # flannel's own main, less two backend imports: tencentvpc (its SDK's modules are not served)
  # and udp (cgo only on amd64). The cluster uses host-gw.
  local dir w=$BUILD/flannel-src
  dir=$(module_dir "github.com/flannel-io/flannel@$FLANNEL_VERSION")
  rm -rf "$w"; cp -r "$dir" "$w"; chmod -R u+w "$w"
  sed -i -e '/flannel\/pkg\/backend\/tencentvpc"/d' -e '/flannel\/pkg\/backend\/udp"/d' "$w/main.go"
  (cd "$w" && go build -p "$JOBS" -trimpath -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" -o "$NODE_BIN/flanneld" . &&
    go build -trimpath -ldflags "-s -w" -o "$NODE_BIN/install-conf" ./cmd/install_conf/)
  built flanneld "$FLANNEL_VERSION"; built install-conf "$FLANNEL_VERSION"
}

# What kubeadm will ask the node's containerd for, by role: its image list, read once after
# kubeadm is built (KUBEADM_IMAGES).
image_of() { grep "/$1:" <<<"$KUBEADM_IMAGES" | head -1; }

# --- 2. Debian roots -------------------------------------------------------------------------------
# podman images keyed by what built them (a label), imported from mmdebstrap's tar; the key is
# this script and the versions, where both roots' packages and hooks are written.
ROOTS_KEY=$(cat "$KIND_SCRIPTS/build-node-image.sh" "$KIND_SCRIPTS/versions.env" | sha256sum | cut -c1-16)
root_current() { [ "$(podman image inspect --format '{{ index .Labels "drainwatch.kind.inputs" }}' "$1" 2>/dev/null)" = "$2" ]; }
debian_root() { # image key packages changes customize-hook...   (changes: Dockerfile lines, one a line)
  local image=$1 key=$2 pkgs=$3 changes=$4; shift 4
  root_current "$image" "$key" && return 0
  local hooks=() h ch=(--change "LABEL drainwatch.kind.inputs=$key") line
  for h in "$@"; do hooks+=(--customize-hook="$h"); done
  while IFS= read -r line; do [ -z "$line" ] || ch+=(--change "$line"); done <<<"$changes"
  log "mmdebstrap $DEBIAN_SUITE -> $image"
  nice -n 10 mmdebstrap --variant=minbase --mode=root --format=tar --include="$pkgs" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "${hooks[@]}" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
    "$DEBIAN_SUITE" "$BUILD/root.tar" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE main" "deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main" \
    "deb ${DEBIAN_MIRROR%/debian}/debian-security $DEBIAN_SUITE-security main"
  podman rmi -f "$image" >/dev/null 2>&1 || true
  podman import "${ch[@]}" "$BUILD/root.tar" "$image" >/dev/null
  rm -f "$BUILD/root.tar"
}
BASE_IMAGE=localhost/drainwatch/kind-base:$DEBIAN_SUITE
TOOLS_IMAGE=localhost/drainwatch/kind-tools:$DEBIAN_SUITE
build_base() {
  # kind's images/base, from Debian's packages and kind's own files (its module at $KIND_VERSION).
  local k
  k=$(module_dir "sigs.k8s.io/kind@$KIND_VERSION")/images/base/files
  # kind's entrypoint and stop signal (images/base/Dockerfile) on the imported root.
  debian_root "$BASE_IMAGE" "$ROOTS_KEY" \
    systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,fuse-overlayfs,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins,socat,ebtables \
    $'ENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\nCMD []' \
    "cp -r $k/usr/local/bin/. \"\$1/usr/local/bin/\" && chmod 0755 \"\$1\"/usr/local/bin/*" \
    "mkdir -p \"\$1/kind\" && cp -r $k/kind/. \"\$1/kind/\" && chmod -R a+rX \"\$1/kind\" && chmod 0755 \"\$1\"/kind/bin/*" \
    "cp $k/etc/crictl.yaml \"\$1/etc/\" && mkdir -p \"\$1/etc/containerd\" && cp $k/etc/containerd/config.toml \"\$1/etc/containerd/\"" \
    "cp $k/etc/default/kubelet \"\$1/etc/default/\" && cp $k/etc/sysctl.d/* \"\$1/etc/sysctl.d/\"" \
    "mkdir -p \"\$1/etc/systemd/system/kubelet.service.d\" && find $k/etc/systemd/system/ -maxdepth 1 -type f -exec cp {} \"\$1/etc/systemd/system/\" \\; && cp $k/etc/systemd/system/kubelet.service.d/* \"\$1/etc/systemd/system/kubelet.service.d/\"" \
    'sed -i "s#^ExecStart=/usr/local/bin/containerd#ExecStart=/usr/bin/containerd#" "$1/etc/systemd/system/containerd.service"' \
    'find "$1/lib/systemd/system/sysinit.target.wants/" -name "systemd-tmpfiles-setup.service" -delete; rm -f "$1"/lib/systemd/system/multi-user.target.wants/* "$1"/etc/systemd/system/*.wants/* "$1"/lib/systemd/system/local-fs.target.wants/* "$1"/lib/systemd/system/sockets.target.wants/*udev* "$1"/lib/systemd/system/sockets.target.wants/*initctl* "$1"/lib/systemd/system/basic.target.wants/*; echo ReadKMsg=no >> "$1/etc/systemd/journald.conf"; ln -sf /usr/lib/systemd/systemd "$1/sbin/init"' \
    'chroot "$1" systemctl enable kubelet.service containerd.service undo-mount-hacks.service && chroot "$1" systemctl mask systemd-binfmt.service' \
    'mkdir -p "$1/etc/kubernetes/manifests" "$1/opt/cni" && ln -sfn /usr/lib/cni "$1/opt/cni/bin"' \
    'chroot "$1" ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer| length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" | jq "del(.process.rlimits)" > "$1/etc/containerd/cri-base.json"' \
    ': > "$1/etc/machine-id"'
}

build_tools() {
  debian_root "$TOOLS_IMAGE" "$ROOTS_KEY" iptables,conntrack,iproute2,nftables,ca-certificates ""
}

# --- 3. component images --------------------------------------------------------------------------
static_image() { # name binary... (the first is the entrypoint)
  local name=$1 c b; shift
  c=$(buildah from scratch)
  for b in "$@"; do buildah copy --chmod 0755 "$c" "$b" /usr/local/bin/ >/dev/null; done
  buildah config --env PATH=/usr/local/bin --entrypoint "[\"/usr/local/bin/$(basename "$1")\"]" "$c"
  buildah commit -q --rm "$c" "$name" >/dev/null
}
tools_image() { # name entrypoint-json (dest:src)...
  local name=$1 entry=$2 c f; shift 2
  c=$(buildah from "$TOOLS_IMAGE")
  buildah copy --chmod 0755 "$c" "$KIND_SCRIPTS/iptables-mode" /usr/local/bin/iptables-mode >/dev/null
  for f in "$@"; do buildah copy --chmod 0755 "$c" "${f#*:}" "${f%%:*}" >/dev/null; done
  buildah config --entrypoint "$entry" "$c"
  buildah commit -q --rm "$c" "$name" >/dev/null
}
FLANNEL_IMAGE=localhost/drainwatch/flannel:$FLANNEL_VERSION
LOCAL_PATH_IMAGE=localhost/drainwatch/local-path-provisioner:$LOCAL_PATH_VERSION
component_images() {
  local api cm sched proxy etcd dns pause
  api=$(image_of kube-apiserver); cm=$(image_of kube-controller-manager); sched=$(image_of kube-scheduler)
  proxy=$(image_of kube-proxy); etcd=$(image_of etcd); dns=$(image_of coredns); pause=$(image_of pause)
  [ -n "$api" ] && [ -n "$etcd" ] && [ -n "$dns" ] && [ -n "$pause" ] || die "kubeadm config images list named no apiserver/etcd/coredns/pause image"
  static_image "$api" "$K8S_BIN/kube-apiserver"
  static_image "$cm" "$K8S_BIN/kube-controller-manager"
  static_image "$sched" "$K8S_BIN/kube-scheduler"
  # etcd: the testbed's build, under the tag kubeadm asks for (same minor; versions.env says which).
  static_image "$etcd" "$ETCD_BIN/etcd" "$ETCD_BIN/etcdctl"
  static_image "$dns" "$NODE_BIN/coredns"
  static_image "$LOCAL_PATH_IMAGE" "$NODE_BIN/local-path-provisioner"
  # kubeadm's DaemonSet runs /usr/local/bin/kube-proxy by name: that is the iptables-mode wrapper.
  printf '#!/bin/sh\nexec /usr/local/bin/iptables-mode /usr/local/bin/kube-proxy.bin "$@"\n' > "$BUILD/kube-proxy"
  tools_image "$proxy" '["/usr/local/bin/kube-proxy"]' "/usr/local/bin/kube-proxy.bin:$K8S_BIN/kube-proxy" "/usr/local/bin/kube-proxy:$BUILD/kube-proxy"
  # flanneld and install-conf where flannel's image has them; the CNI plugin at /flannel, as
  # flannel-cni-plugin's image has it, for the init container that installs it on the node.
  tools_image "$FLANNEL_IMAGE" '["/usr/local/bin/iptables-mode", "/opt/bin/flanneld"]' \
    "/opt/bin/flanneld:$NODE_BIN/flanneld" "/opt/bin/install-conf:$NODE_BIN/install-conf" "/flannel:$NODE_BIN/flannel"
  # pause: the testbed's, built from deploy/local-cluster/pause.c, under the tag kubeadm asks for.
  local id; id=$(podman load -q -i "$DRAINWATCH_K8S_CACHE/images/pause-oci.tar" | sed -n 's/^Loaded image: //p' | tail -1)
  [ -n "$id" ] || die "the pause archive loaded no image"
  podman tag "$id" "$pause"
  SANDBOX_IMAGE=$pause
  IMAGES=("$api" "$cm" "$sched" "$proxy" "$etcd" "$dns" "$pause" "$FLANNEL_IMAGE" "$LOCAL_PATH_IMAGE" "$TOOLS_IMAGE")
}

# --- 4. the node --------------------------------------------------------------------------------
assemble_node() {
  local b=drainwatch-kind-build kind_dir
  kind_dir=$(module_dir "sigs.k8s.io/kind@$KIND_VERSION")
  podman rm -f "$b" >/dev/null 2>&1 || true
  podman run -d --name "$b" --network none --privileged --entrypoint sleep "$BASE_IMAGE" infinity >/dev/null
  trap 'podman rm -f drainwatch-kind-build >/dev/null 2>&1 || true' EXIT
  podman cp "$NODE_BIN/kubeadm" "$b:/usr/bin/kubeadm"
  podman cp "$K8S_BIN/kubelet" "$b:/usr/bin/kubelet"
  podman cp "$K8S_BIN/kubectl" "$b:/usr/bin/kubectl"
  podman cp "$NODE_BIN/crictl" "$b:/usr/local/bin/crictl"
  # The sandbox image kubeadm's kubelet uses; the OOM score left alone (no CAP_SYS_RESOURCE here).
  podman exec "$b" sh -c "chown root:root /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl /usr/local/bin/crictl &&
    chmod 0755 /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl /usr/local/bin/crictl &&
    printf %s $K8S_VERSION > /kind/version && mkdir -p /kind/manifests &&
    sed -i -e 's#sandbox_image = \"[^\"]*\"#sandbox_image = \"$SANDBOX_IMAGE\"#' -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' /etc/containerd/config.toml"
  python3 "$KIND_SCRIPTS/manifests.py" cni "$(module_dir "github.com/flannel-io/flannel@$FLANNEL_VERSION")/Documentation/kube-flannel.yml" "$FLANNEL_IMAGE" > "$BUILD/default-cni.yaml"
  python3 "$KIND_SCRIPTS/manifests.py" storage "$kind_dir/pkg/build/nodeimage/const_storage.go" "$LOCAL_PATH_IMAGE" "$TOOLS_IMAGE" > "$BUILD/default-storage.yaml"
  podman cp "$BUILD/default-cni.yaml" "$b:/kind/manifests/default-cni.yaml"
  podman cp "$BUILD/default-storage.yaml" "$b:/kind/manifests/default-storage.yaml"
  log "preloading ${#IMAGES[@]} images into the node's containerd"
  podman exec "$b" sh -c 'nohup containerd > /tmp/containerd.log 2>&1 &'
  podman exec "$b" sh -c 'for i in $(seq 50); do [ -S /run/containerd/containerd.sock ] && exit 0; sleep 0.2; done; exit 1' \
    || die "containerd did not start in the build container"
  local img
  for img in "${IMAGES[@]}"; do
    podman save --format docker-archive "$img" | podman exec -i "$b" ctr --namespace=k8s.io images import --all-platforms --digests - >/dev/null \
      || die "importing $img into the node's containerd failed"
  done
  podman exec "$b" sh -c 'pkill containerd; for i in $(seq 50); do pgrep containerd >/dev/null || break; sleep 0.2; done; rm -rf /tmp/* /var/log/*.log'
  podman rmi -f "$KIND_NODE_IMAGE" >/dev/null 2>&1 || true
  # kind's own build empties the proxy variables with one `ENV HTTP_PROXY="" HTTPS_PROXY=""
  # NO_PROXY=""`, which docker reads as three; podman 4.3 reads it as one, HTTP_PROXY set to
  # `" HTTPS_PROXY="" NO_PROXY="`, which kubeadm copies into the API server's manifest: its pod
  # and service proxy then dial a proxy at ":0" and fail. One variable per change.
  podman commit -q --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change 'ENV HTTP_PROXY=' --change 'ENV HTTPS_PROXY=' --change 'ENV NO_PROXY=' \
    --change "LABEL drainwatch.kind.inputs=$HASH" "$b" "$KIND_NODE_IMAGE" >/dev/null
  local env
  env=$(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$KIND_NODE_IMAGE") \
    || die "the node image just committed cannot be inspected"
  if grep -Ei '^(https?|no)_proxy=.' <<<"$env"; then
    podman rmi -f "$KIND_NODE_IMAGE" >/dev/null 2>&1 || true
    die "the node image sets a proxy variable above: kubeadm copies it into the API server's manifest, whose pod proxy would dial it"
  fi
  podman rm -f "$b" >/dev/null
  trap - EXIT
}

build_kubeadm
KUBEADM_IMAGES=$("$NODE_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
dns_version=$(image_of coredns); dns_version=${dns_version##*:}
go_tool crictl "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
go_tool local-path-provisioner "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"
go_tool coredns "github.com/coredns/coredns@$dns_version"
go_tool flannel "github.com/containernetworking/plugins/plugins/meta/flannel@$CNI_FLANNEL_VERSION"
build_flannel
build_base
build_tools
component_images
assemble_node
log "node image $KIND_NODE_IMAGE built ($(podman image inspect --format '{{.Size}}' "$KIND_NODE_IMAGE" | awk '{printf "%d MB", $1/1e6}'))"
