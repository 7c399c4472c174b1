#!/usr/bin/env bash
# Builds Traefik from the Go module proxy into the version-keyed cache
#   $DRAINWATCH_K8S_CACHE/traefik-$TRAEFIK_VERSION/bin/traefik
# and prints the binary's path on stdout. A cached binary built by this same script for this
# version is reused; an edit of this script rebuilds it.
#
# `go install github.com/traefik/traefik/v3/cmd/traefik@VERSION` is refused (its go.mod has
# replace directives), so the module's source zip is built as the main module, after three
# changes the proxy here makes necessary:
#   1. the nested module ./pkg/config/dynamic/ext (a replace target) is not in the zip: it is
#      recreated (upstream it holds three empty extension structs and ToRouter);
#   2. the proxy refuses the pinned fork of github.com/abbot/go-http-auth: the fork's older
#      pseudo-version, which it serves, is pinned instead;
#   3. six DNS providers of go-acme/lego need SDK versions the proxy refuses: lego is built from
#      a copy without them (ACME DNS challenges through those six providers are gone; nothing
#      drainwatch runs uses ACME).
# Cold: about 5-6 min on 2 cores at nice 19, 3.3 GB peak memory, ~4 GB of Go caches (shared with
# the Kubernetes build). Run it in the background if your shell has a time limit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../local-cluster/lib.sh"
. "$HERE/versions.env"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"
# Progress goes to stderr: stdout is the binary's path alone.
say() { log "$@" >&2; }

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
export GOMODCACHE=${GOMODCACHE_OVERRIDE:-$GO_CACHE_ROOT/mod}
export GOCACHE=${GOCACHE_OVERRIDE:-$GO_CACHE_ROOT/build}
ROOT=$DRAINWATCH_K8S_CACHE/traefik-$TRAEFIK_VERSION
BIN=$ROOT/bin/traefik
STAMP=$ROOT/bin/built-by.sha256
# The stamp: this script's text and the version (not the path it was run by, nor the other
# controllers' versions).
want=$(printf '%s\n' "$TRAEFIK_VERSION" | cat "$0" - | sha256sum | cut -c1-64)

cached() {
  [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] &&
    "$BIN" version 2>/dev/null | grep -E "^Version:[[:space:]]+${TRAEFIK_VERSION#v}\$" >/dev/null
}

module_dir() { (cd / && go mod download -json "$1") | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'; }

patch_source() {
  local src=$1 lego
  mkdir -p "$src/pkg/config/dynamic/ext"
  printf 'module github.com/traefik/traefik/dynamic/ext\n\ngo 1.24.0\n' > "$src/pkg/config/dynamic/ext/go.mod"
  cat > "$src/pkg/config/dynamic/ext/ext.go" <<'G'
package ext

// HTTP is a dynamic.HTTP extension.
type HTTP struct{}

// Router is a dynamic.Router extension.
type Router struct{}

// RouterIng is a RouterIng extension for ingress provider annotations.
type RouterIng struct{}

// ToRouter converts RouterIng to a Router.
func (r RouterIng) ToRouter() Router {
	return Router{}
}
G
  lego=$(sed -n 's#^[[:space:]]*github.com/go-acme/lego/v5 \(v[^[:space:]]*\).*#\1#p' "$src/go.mod" | head -1)
  [ -n "$lego" ] || die "no github.com/go-acme/lego/v5 requirement in $src/go.mod"
  say "traefik: lego $lego without the six DNS providers the proxy cannot serve"
  rm -rf "$src/third_party" && mkdir -p "$src/third_party"
  cp -r "$(module_dir "github.com/go-acme/lego/v5@$lego")" "$src/third_party/lego"
  chmod -R u+w "$src/third_party/lego"
  python3 - "$src/third_party/lego/providers/dns/zz_gen_dns_providers.go" <<'P'
import re, sys
p = sys.argv[1]
s = open(p).read()
for prov in ['edgedns', 'huaweicloud', 'oraclecloud', 'sakuracloud', 'ucloud', 'yandexcloud']:
    before = s
    s = s.replace('\t"github.com/go-acme/lego/v5/providers/dns/%s"\n' % prov, '')
    s = re.sub(r'\tcase [^\n]*"%s"[^\n]*:\n\t\treturn %s\.NewDNSProvider\(\)\n' % (prov, prov), '', s)
    if s == before:
        sys.exit('provider %s not found in %s: the lego version changed, review the patch' % (prov, p))
open(p, 'w').write(s)
P
  (cd "$src" && go mod edit -replace github.com/go-acme/lego/v5=./third_party/lego \
    -replace github.com/abbot/go-http-auth=github.com/containous/go-http-auth@v0.4.1-0.20200324110947-a37a7636d23e)
}

main() {
  # One build at a time: CI's ingress phase and the cluster run's e2e-ingress may both ask.
  mkdir -p "$ROOT"
  exec 8>"$ROOT/.build.lock"
  flock 8
  if cached; then
    say "traefik $TRAEFIK_VERSION: cached ($BIN)"
    echo "$BIN"
    return
  fi
  local src=$ROOT/src started=$SECONDS
  say "traefik $TRAEFIK_VERSION: source zip from the module proxy"
  rm -rf "$src" && mkdir -p "$ROOT/bin"
  cp -r "$(module_dir "github.com/traefik/traefik/v3@$TRAEFIK_VERSION")" "$src"
  chmod -R u+w "$src"
  patch_source "$src"
  say "traefik: compiling (nice 19)"
  (cd "$src" && nice -n 19 go build -trimpath \
    -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=${TRAEFIK_VERSION#v} -X github.com/traefik/traefik/v3/pkg/version.Codename=drainwatch-testbed" \
    -o "$BIN" ./cmd/traefik)
  echo "$want" > "$STAMP"
  cached || die "the built $BIN does not report version ${TRAEFIK_VERSION#v}"
  say "traefik $TRAEFIK_VERSION: built in $((SECONDS - started)) s ($BIN)"
  echo "$BIN"
}

main "$@"
