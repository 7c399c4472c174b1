#!/usr/bin/env bash
# kind for the drainwatch actions (setup/action.yml, and action.yml when the job has no cluster):
# one script, so both create the same cluster. Everything comes from the environment, which the
# actions fill from their inputs through `env:`.
#
#   kind.sh config          the kind cluster configuration, on stdout
#   kind.sh create          install kind if missing, create the cluster, write its kubeconfig,
#                           apply drainwatch's ClusterRole for a managed ingress
#   kind.sh load IMAGE...   load images from the runner's docker into every node (pulled first
#                           when docker does not have them)
#
#   DRAINWATCH_KIND_NAME        cluster name (default drainwatch)
#   DRAINWATCH_KIND_WORKERS     worker nodes beside the control plane (default 1; >= 1, so that
#                               drain-node has a node to drain and one to move to)
#   DRAINWATCH_KUBE_PROXY_MODE  iptables | nftables | ipvs (default iptables, kind's default)
#   DRAINWATCH_KIND_NODE_IMAGE  the node image, i.e. the Kubernetes version (default kind's)
#   DRAINWATCH_KIND_POD_SUBNET  the pods' range (default kind's, 10.244.0.0/16): another when that
#                               range is taken on the machine (a VPN, another cluster's guard)
#   DRAINWATCH_KIND_SERVICE_SUBNET  the Services' range (default kind's, 10.96.0.0/16)
#   DRAINWATCH_KIND_KUBECONFIG  where create writes the kubeconfig
#   DRAINWATCH_KIND_VERSION     the kind release installed when kind is not on PATH (v0.33.0)
set -euo pipefail

name=${DRAINWATCH_KIND_NAME:-drainwatch}
workers=${DRAINWATCH_KIND_WORKERS:-1}
mode=${DRAINWATCH_KUBE_PROXY_MODE:-iptables}
kind_version=${DRAINWATCH_KIND_VERSION:-v0.33.0}
pod_subnet=${DRAINWATCH_KIND_POD_SUBNET:-}
service_subnet=${DRAINWATCH_KIND_SERVICE_SUBNET:-}

die() { echo "::error title=drainwatch setup::$*" >&2; exit 2; }

config() {
  [[ "$workers" =~ ^[0-9]+$ ]] || die "workers must be a number (got '$workers')"
  [ "$workers" -ge 1 ] || die "workers must be at least 1: drain-node needs a node to drain and another for the replacements (got $workers)"
  case "$mode" in iptables | nftables | ipvs) ;; *) die "kube-proxy-mode must be iptables, nftables or ipvs (got '$mode')" ;; esac
  local cidr='^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$'
  [ -z "$pod_subnet" ] || [[ "$pod_subnet" =~ $cidr ]] || die "pod-subnet must be an IPv4 CIDR such as 10.245.0.0/16 (got '$pod_subnet')"
  [ -z "$service_subnet" ] || [[ "$service_subnet" =~ $cidr ]] || die "service-subnet must be an IPv4 CIDR such as 10.97.0.0/16 (got '$service_subnet')"
  echo "kind: Cluster"
  echo "apiVersion: kind.x-k8s.io/v1alpha4"
  echo "networking:"
  echo "  kubeProxyMode: $mode"
  [ -z "$pod_subnet" ] || echo "  podSubnet: $pod_subnet"
  [ -z "$service_subnet" ] || echo "  serviceSubnet: $service_subnet"
  echo "nodes:"
  echo "  - role: control-plane"
  local i
  for ((i = 0; i < workers; i++)); do echo "  - role: worker"; done
}

# kind on PATH, else its release binary for this runner's architecture, checked against the
# release's .sha256sum (as helm/kind-action does), cached in the tool cache.
install() {
  command -v kind >/dev/null 2>&1 && return 0
  local arch dir url
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) die "no kind release for $(uname -m)" ;; esac
  dir="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/kind/$kind_version/$arch"
  if [ ! -x "$dir/kind" ]; then
    url="https://github.com/kubernetes-sigs/kind/releases/download/$kind_version/kind-linux-$arch"
    mkdir -p "$dir"
    curl -fsSL --retry 3 -o "$dir/kind-linux-$arch" "$url" || die "downloading $url failed"
    curl -fsSL --retry 3 -o "$dir/kind-linux-$arch.sha256sum" "$url.sha256sum" || die "downloading $url.sha256sum failed"
    (cd "$dir" && sha256sum -c --quiet "kind-linux-$arch.sha256sum") || die "kind-linux-$arch does not match its .sha256sum"
    mv "$dir/kind-linux-$arch" "$dir/kind"
    chmod +x "$dir/kind"
  fi
  export PATH="$dir:$PATH"
  [ -z "${GITHUB_PATH:-}" ] || echo "$dir" >> "$GITHUB_PATH"
}

create() {
  local kubeconfig=${DRAINWATCH_KIND_KUBECONFIG:?DRAINWATCH_KIND_KUBECONFIG is required}
  local cfg args
  cfg="$(dirname "$kubeconfig")/kind-config.yaml"
  mkdir -p "$(dirname "$kubeconfig")"
  config > "$cfg"
  install
  args=(create cluster --name "$name" --config "$cfg" --kubeconfig "$kubeconfig" --wait 120s)
  if [ -n "${DRAINWATCH_KIND_NODE_IMAGE:-}" ]; then args+=(--image "$DRAINWATCH_KIND_NODE_IMAGE"); fi
  echo "drainwatch setup: kind ${args[*]}"
  sed 's/^/  /' "$cfg"
  kind "${args[@]}"
  roles "$kubeconfig"
}

# drainwatch's cluster-scoped role for the Traefik a trial deploys (`ingress-managed`), which
# the trial binds in the target's namespace only: an admin applies it once per cluster
# (deploy/rbac-attach.yaml); on the cluster made here that is this step. Unbound it grants
# nothing; without it the managed Traefik reads nothing and the trial's ingress-deployed check
# fails. Taken from the action's own checkout, so it is this release's.
roles() {
  local kubeconfig=$1 file doc
  file="$(cd "$(dirname "$0")/.." && pwd)/deploy/rbac-attach.yaml"
  [ -f "$file" ] || die "no $file in the action's checkout"
  command -v kubectl >/dev/null 2>&1 || die "kubectl is not on PATH: the cluster's ClusterRole drainwatch-ingress-traefik is applied with it (GitHub's hosted runners have it; install it on a self-hosted one)"
  doc=$(awk '
    function flush() { if (d ~ /\nkind: ClusterRole\n/ && d ~ /\n  name: drainwatch-ingress-traefik\n/) printf "%s", d; d = "\n" }
    BEGIN { d = "\n" }
    /^---$/ { flush(); next }
    { d = d $0 "\n" }
    END { flush() }' "$file")
  [ "$(grep -c '^kind: ClusterRole$' <<<"$doc")" = 1 ] || die "no single ClusterRole drainwatch-ingress-traefik in $file"
  echo "drainwatch setup: kubectl apply ClusterRole drainwatch-ingress-traefik (deploy/rbac-attach.yaml)"
  kubectl --kubeconfig "$kubeconfig" apply -f - <<<"$doc" || die "applying the ClusterRole drainwatch-ingress-traefik failed"
}

load() {
  local img
  for img in "$@"; do
    [ -n "$img" ] || continue
    if ! docker image inspect "$img" >/dev/null 2>&1; then
      echo "drainwatch setup: pulling $img"
      docker pull "$img" || die "$img is neither on this runner's docker nor pullable"
    fi
    echo "drainwatch setup: kind load docker-image $img --name $name"
    kind load docker-image "$img" --name "$name" || die "loading $img into kind cluster $name failed"
  done
}

cmd=${1:-}
shift || true
case "$cmd" in
  config) config ;;
  create) create ;;
  load) load "$@" ;;
  *) die "usage: kind.sh config|create|load IMAGE..." ;;
esac
