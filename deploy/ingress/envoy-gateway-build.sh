#!/usr/bin/env bash
# Builds Envoy Gateway's one binary (controller, certgen and the proxies' shutdown manager) from
# the Go module proxy into the version-keyed cache
#   $DRAINWATCH_K8S_CACHE/envoy-gateway-$ENVOY_GATEWAY_VERSION/bin/envoy-gateway
# and prints its path on stdout. Its go.mod has no replace directives, so `go install` builds it
# as released. A cached binary built by this same script for this version is reused.
# Cold: about 10 min on 2 cores at nice 19. Run it in the background if your shell has a time
# limit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../local-cluster/lib.sh"
. "$HERE/versions.env"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"
# Progress goes to stderr: stdout is the binary's path alone.
say() { log "$@" >&2; }

export GOTOOLCHAIN=local CGO_ENABLED=0
export GOMODCACHE=${GOMODCACHE_OVERRIDE:-$GO_CACHE_ROOT/mod}
export GOCACHE=${GOCACHE_OVERRIDE:-$GO_CACHE_ROOT/build}
ROOT=$DRAINWATCH_K8S_CACHE/envoy-gateway-$ENVOY_GATEWAY_VERSION
BIN=$ROOT/bin/envoy-gateway
STAMP=$ROOT/bin/built-by.sha256
# The stamp: this script's text and the version (not the path it was run by, nor the other
# controllers' versions).
want=$(printf '%s\n' "$ENVOY_GATEWAY_VERSION" | cat "$0" - | sha256sum | cut -c1-64)
PKG=github.com/envoyproxy/gateway

cached() {
  [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] &&
    "$BIN" version 2>/dev/null | grep -F "$ENVOY_GATEWAY_VERSION" >/dev/null
}

main() {
  mkdir -p "$ROOT/bin"
  exec 8>"$ROOT/.build.lock"
  flock 8
  if cached; then
    say "envoy-gateway $ENVOY_GATEWAY_VERSION: cached ($BIN)"
    echo "$BIN"
    return
  fi
  local started=$SECONDS
  say "envoy-gateway $ENVOY_GATEWAY_VERSION: compiling from the module proxy (nice 19)"
  # The version the binary reports is stamped the way upstream's Makefile does.
  (cd / && GOBIN=$ROOT/bin nice -n 19 go install -trimpath \
    -ldflags "-s -w -X $PKG/internal/cmd/version.envoyGatewayVersion=$ENVOY_GATEWAY_VERSION" \
    "$PKG/cmd/envoy-gateway@$ENVOY_GATEWAY_VERSION")
  echo "$want" > "$STAMP"
  cached || die "the built $BIN does not report version $ENVOY_GATEWAY_VERSION"
  say "envoy-gateway $ENVOY_GATEWAY_VERSION: built in $((SECONDS - started)) s ($BIN)"
  echo "$BIN"
}

main "$@"
