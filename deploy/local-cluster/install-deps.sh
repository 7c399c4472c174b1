#!/usr/bin/env bash
# Installs the Debian packages the local testbed needs when they are missing. Idempotent.
# Go (for the cold build of Kubernetes and etcd) is expected at /usr/local/go/bin/go or on PATH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
# shellcheck source=../apt.sh
. "$(dirname "$0")/../apt.sh"
# shellcheck disable=SC2086 # a list of package names
apt_ensure $DEBIAN_PACKAGES
# Debian's containerd package would start a daemon under systemd; there is none here, and we run
# our own instances with private sockets, so nothing else needs stopping.
for b in containerd ctr runc iptables conntrack buildah openssl curl gcc; do
  command -v "$b" >/dev/null || die "$b not found after install"
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/portmap ] \
  || die "CNI plugins missing in /usr/lib/cni"
log "packages ok"
