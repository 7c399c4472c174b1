#!/usr/bin/env bash
# action.yml's "Get the drainwatch binary" step: the binary of this release onto the runner,
# without a Docker daemon unless asked for one.
#
#   INPUT_BINARY         a drainwatch binary already on the runner (~/ expanded): used as is
#   INPUT_BINARY_SOURCE  release (default): the release asset drainwatch-<arch>-linux-musl for
#                        the runner's architecture, checked against its .sha256; image: copied
#                        out of DRAINWATCH_IMAGE with docker create/cp
#   INPUT_RELEASE_URL    base URL of the assets; else $DRAINWATCH_RELEASE_URL; else this
#                        release on github.com (release.yml publishes the assets)
#   DRAINWATCH_VERSION, DRAINWATCH_IMAGE   from the prepare step
#
# Writes bin=PATH to $GITHUB_OUTPUT.
set -euo pipefail
version=${DRAINWATCH_VERSION:?}
out=${GITHUB_OUTPUT:-/dev/stdout}
fail() { echo "::error title=drainwatch: binary::$*" >&2; exit 2; }

if [ -n "${INPUT_BINARY:-}" ]; then
  bin=$INPUT_BINARY
  case "$bin" in "~/"*) bin="$HOME/${bin#\~/}" ;; esac
  [ -x "$bin" ] || fail "the binary input $bin is not an executable file"
else
  case "${INPUT_BINARY_SOURCE:-release}" in
    release)
      case "${RUNNER_ARCH:-$(uname -m)}" in
        X64 | x86_64) arch=x86_64 ;;
        ARM64 | aarch64) arch=aarch64 ;;
        *) fail "no release binary for the runner architecture ${RUNNER_ARCH:-$(uname -m)}: use binary-source: image or the binary input" ;;
      esac
      base=${INPUT_RELEASE_URL:-${DRAINWATCH_RELEASE_URL:-https://github.com/drainwatch/action/releases/download/v$version}}
      asset="drainwatch-$arch-linux-musl"
      dir="${RUNNER_TOOL_CACHE:-$RUNNER_TEMP}/drainwatch/$version/$arch"
      mkdir -p "$dir"
      # The checksum is fetched every time (it is small): a cached binary is used only when it
      # matches what the release says now.
      curl -fsSL --retry 3 -o "$dir/$asset.sha256" "$base/$asset.sha256" || fail "downloading $base/$asset.sha256 failed"
      if ! (cd "$dir" && [ -f "$asset" ] && sha256sum -c --quiet "$asset.sha256" >/dev/null 2>&1); then
        echo "drainwatch: downloading $base/$asset"
        curl -fsSL --retry 3 -o "$dir/$asset" "$base/$asset" || fail "downloading $base/$asset failed"
        (cd "$dir" && sha256sum -c --quiet "$asset.sha256") || fail "$asset does not match $base/$asset.sha256"
      fi
      chmod +x "$dir/$asset"
      bin="$dir/$asset"
      ;;
    image)
      command -v docker >/dev/null 2>&1 || fail "binary-source: image needs docker on the runner: use binary-source: release"
      dir="$RUNNER_TEMP/drainwatch/bin"
      mkdir -p "$dir"
      cid="$(docker create "${DRAINWATCH_IMAGE:?}")" || fail "docker create $DRAINWATCH_IMAGE failed"
      trap 'docker rm "$cid" >/dev/null' EXIT
      docker cp "$cid:/drainwatch" "$dir/drainwatch" || fail "docker cp of /drainwatch out of $DRAINWATCH_IMAGE failed"
      chmod +x "$dir/drainwatch"
      bin="$dir/drainwatch"
      ;;
    *) fail "binary-source must be release or image (got '$INPUT_BINARY_SOURCE')" ;;
  esac
fi

got=$("$bin" --version) || fail "$bin --version failed"
echo "drainwatch: $got ($bin)"
case "$got" in *" $version"*) ;; *) echo "::warning title=drainwatch::$bin is '$got', the action is $version" ;; esac
echo "bin=$bin" >> "$out"
