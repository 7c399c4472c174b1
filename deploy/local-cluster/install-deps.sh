#!/usr/bin/env bash
# Installs the Debian packages the local testbed needs when they are missing. Idempotent.
# Go (for the cold build of Kubernetes and etcd) is expected at /usr/local/go/bin/go or on PATH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
missing=()
for p in $DEBIAN_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || apt-get -o DPkg::Lock::Timeout=600 update -q
  # --no-install-recommends: containerd's recommends would pull in more than we use.
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's containerd package would start a daemon under systemd; there is none here, and we run
# our own instances with private sockets, so nothing else needs stopping.
for b in containerd ctr runc iptables conntrack buildah openssl curl gcc; do
  command -v "$b" >/dev/null || die "$b not found after install"
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/portmap ] \
  || die "CNI plugins missing in /usr/lib/cni"
log "packages ok"
