#!/usr/bin/env bash
# Installs what `make dist` needs, outside the repository, pinned. Idempotent; prints the tools dir.
#   rust targets  x86_64- and aarch64-unknown-linux-musl (rustup)
#   ziglang       PyPI, in a venv under $DIST_TOOLS: zig is cargo-zigbuild's cross C compiler
#                 and linker (ring compiles C), one toolchain for both architectures
#   cargo-zigbuild, cargo-cyclonedx   crates.io, `cargo install --locked` at exact versions
#   qemu-user-static, python3-jsonschema  Debian: run the aarch64 binary here and check its
#                 reports (make dist-test)
# The versions are the ones `make dist` was verified with (docs/releases.md).
set -euo pipefail
DIST_TOOLS=${DIST_TOOLS:-${DRAINWATCH_CACHE:-/var/cache/drainwatch}/dist-tools}
ZIGLANG_VERSION=0.15.2
ZIGBUILD_VERSION=0.24.1
CYCLONEDX_VERSION=0.5.9
log() { echo "dist-setup: $*" >&2; }
mkdir -p "$DIST_TOOLS"

for t in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
  if ! rustup target list --installed | grep -qx "$t"; then
    log "rustup target add $t"; rustup target add "$t" >&2
  fi
done

venv=$DIST_TOOLS/venv
if ! "$venv/bin/python" -m ziglang version 2>/dev/null | grep -qx "${ZIGLANG_VERSION%.post*}"; then
  log "ziglang==$ZIGLANG_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ziglang==$ZIGLANG_VERSION" >&2
fi

# cargo install builds in its own target dir, removed afterwards (never the project's).
install_crate() { # name version binary [args before --version]
  if ! "$DIST_TOOLS/bin/$3" "${@:4}" --version 2>/dev/null | grep -q " $2\$"; then
    log "cargo install $1@$2 into $DIST_TOOLS"
    local tmp; tmp=$(mktemp -d "$DIST_TOOLS/build.XXXXXX")
    cargo install --quiet --locked --root "$DIST_TOOLS" --target-dir "$tmp" "$1@$2" >&2
    rm -rf "$tmp"
  fi
}
install_crate cargo-zigbuild "$ZIGBUILD_VERSION" cargo-zigbuild
install_crate cargo-cyclonedx "$CYCLONEDX_VERSION" cargo-cyclonedx cyclonedx  # a cargo subcommand only

# Debian packages (sudo when not root, as on a GitHub runner)
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
pkgs=()
command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
python3 -c 'import jsonschema' 2>/dev/null || pkgs+=(python3-jsonschema)
if ((${#pkgs[@]})); then
  log "apt-get install ${pkgs[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2 \
    || { $SUDO apt-get update -q >&2 && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2; }
fi
command -v buildah >/dev/null || { log "buildah missing: make cluster-deps installs it"; exit 2; }
echo "$DIST_TOOLS"
