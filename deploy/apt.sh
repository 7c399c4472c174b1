# apt_ensure PKG...: installs those of the Debian packages that are not installed yet, without
# their recommends (containerd's would pull in more than the scripts use). Idempotent. Sourced by
# the install-deps scripts after their lib.sh, whose log() it uses.
# shellcheck shell=bash
apt_ensure() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}
