#!/usr/bin/env bash
# `make envoy-gateway-up`: Envoy Gateway installed into the running local cluster as its chart
# would install it (deploy/ingress/envoy-gateway/): the Gateway API and Envoy Gateway CRDs from
# the module zip of $ENVOY_GATEWAY_VERSION, the controller in envoy-gateway-system, and the
# GatewayClass `envoy-gateway`. Needs `make envoy-gateway-image`. Idempotent: a second run
# re-applies and waits again.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../local-cluster/lib.sh"
. "$HERE/versions.env"
need_root
[ -f "$ADMIN_KUBECONFIG" ] || die "no local cluster ($ADMIN_KUBECONFIG missing): make cluster-up"

NS=envoy-gateway-system
GATEWAY_IMAGE=docker.io/envoyproxy/gateway:$ENVOY_GATEWAY_VERSION
ENVOY_IMAGE=docker.io/envoyproxy/envoy:v$ENVOY_VERSION
M=$HERE/envoy-gateway

# The chart's CRD templates are plain manifests inside one Helm condition: its first and last
# lines. Server-side apply: the EnvoyProxy CRD is larger than client-side apply's annotation.
apply_crds() {
  local src f
  src=$(cd / && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE=$GO_CACHE_ROOT/mod \
    go mod download -json "github.com/envoyproxy/gateway@$ENVOY_GATEWAY_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  for f in "$src/charts/gateway-crds-helm/templates/standard-gatewayapi-crds.yaml" \
           "$src"/charts/gateway-crds-helm/templates/generated/*.yaml; do
    grep -v '^{{-' "$f" | kc apply --server-side --force-conflicts -f - >/dev/null \
      || die "applying the CRDs of $f failed"
  done
  kc wait --for condition=established --timeout=60s crd/gateways.gateway.networking.k8s.io \
    crd/httproutes.gateway.networking.k8s.io crd/envoyproxies.gateway.envoyproxy.io >/dev/null
  log "CRDs: Gateway API and Envoy Gateway $ENVOY_GATEWAY_VERSION"
}

render() { sed -e "s#@GATEWAY_IMAGE@#$GATEWAY_IMAGE#g" -e "s#@ENVOY_IMAGE@#$ENVOY_IMAGE#g" "$@"; }

# certgen writes the controller's and the Envoys' mTLS secrets; its Job (in base.yaml) runs once
# and is started again only after it failed.
run_certgen() {
  render "$M/base.yaml" | kc apply -f - >/dev/null
  if kc -n "$NS" get secret envoy-gateway envoy >/dev/null 2>&1; then
    log "certgen: secrets present"
    return
  fi
  if [ "$(kc -n "$NS" get job eg-gateway-helm-certgen -o jsonpath='{.status.failed}')" != "" ]; then
    kc -n "$NS" delete job eg-gateway-helm-certgen >/dev/null
    render "$M/base.yaml" | kc apply -f - >/dev/null
  fi
  if ! kc -n "$NS" wait --for condition=complete --timeout=120s job/eg-gateway-helm-certgen >/dev/null; then
    kc -n "$NS" logs job/eg-gateway-helm-certgen --tail=20 >&2 || true
    die "the certgen Job did not complete in 120 s (its log above; kubectl -n $NS describe job eg-gateway-helm-certgen)"
  fi
  log "certgen: secrets written"
}

start_controller() {
  local ip hash
  ip=$(kc -n "$NS" get svc envoy-gateway -o jsonpath='{.spec.clusterIP}')
  [ -n "$ip" ] || die "the envoy-gateway Service has no cluster IP"
  hash=$(render "$M/controller.yaml" | sed "s#@XDS_IP@#$ip#g" | sha256sum | cut -c1-16)
  render "$M/controller.yaml" | sed -e "s#@XDS_IP@#$ip#g" -e "s#@CONFIG_HASH@#$hash#g" |
    kc apply -f - >/dev/null
  if ! kc -n "$NS" rollout status deploy/envoy-gateway --timeout=180s >/dev/null; then
    kc -n "$NS" logs deploy/envoy-gateway --tail=30 >&2 || true
    die "the envoy-gateway controller is not ready in 180 s (its log above)"
  fi
  if ! kc wait --for condition=Accepted --timeout=60s gatewayclass/envoy-gateway >/dev/null; then
    die "GatewayClass envoy-gateway not Accepted in 60 s (kubectl get gatewayclass envoy-gateway -o yaml)"
  fi
  log "envoy-gateway $ENVOY_GATEWAY_VERSION ready (xDS at $ip:18000; GatewayClass envoy-gateway, Envoy $ENVOY_IMAGE)"
}

apply_crds
run_certgen
start_controller
