#!/usr/bin/env bash
# Installs what building and testing drainwatch needs on a Debian 12 machine. Idempotent.
set -euo pipefail
need_pkgs=()
for p in musl-tools; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if ((${#need_pkgs[@]})); then
  echo "setup: installing ${need_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need_pkgs[@]}" >/dev/null
fi
if ! rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
  echo "setup: adding rust target x86_64-unknown-linux-musl"
  rustup target add x86_64-unknown-linux-musl
fi
mkdir -p "${DRAINWATCH_CACHE:-/var/cache/drainwatch}"
