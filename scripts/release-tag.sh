#!/usr/bin/env bash
# The release tag rules, one place (release.yml calls this; tests/release_tags.rs runs it):
#
#   scripts/release-tag.sh TAG [CARGO_VERSION]
#
# CARGO_VERSION: the argument, else $CARGO_VERSION, else Cargo.toml's [package] version.
# A tag is vX.Y.Z (a final release) or vX.Y.Z-rc.N / -beta.N / -alpha.N (a pre-release), and
# must be exactly "v" + the Cargo version: a release is the crate it says it is.
# Prints, as key=value lines for $GITHUB_OUTPUT:
#   version=X.Y.Z[-pre]   kind=final|prerelease   prerelease=false|true   major=vX
#   move-major=true|false (only a final release moves vX: `uses: drainwatch/action@v0` and the
#                          image's :v0 never follow an -rc)
#   tags=<the image and git tags to push, space-separated: the exact tag always, vX when final>
# A refused tag exits 2 with "release-tag: error: ..." on stderr and nothing on stdout.
set -euo pipefail
die() { echo "release-tag: error: $*" >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: release-tag.sh TAG [CARGO_VERSION]"; fi
tag=$1
cargo_version=${2:-${CARGO_VERSION:-}}
source="the argument or \$CARGO_VERSION"
if [ -z "$cargo_version" ]; then
  manifest="$(dirname "$0")/../Cargo.toml"
  cargo_version=$(sed -n '/^\[package\]/,/^\[/{s/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p}' "$manifest" | head -1)
  [ -n "$cargo_version" ] || die "no [package] version in $manifest"
  source=Cargo.toml
fi

re='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(rc|beta|alpha)\.(0|[1-9][0-9]*))?$'
[[ $tag =~ $re ]] || die "tag '$tag' is not a release tag: vX.Y.Z, or vX.Y.Z-rc.N / -beta.N / -alpha.N for a pre-release"
major="v${BASH_REMATCH[1]}"
pre=${BASH_REMATCH[4]}
[ "$tag" = "v$cargo_version" ] || die "tag '$tag' does not match the Cargo version '$cargo_version' ($source): tag v$cargo_version, or bump the version first"

if [ -z "$pre" ]; then
  kind=final prerelease=false move=true tags="$tag $major"
else
  kind=prerelease prerelease=true move=false tags="$tag"
fi
printf 'version=%s\nkind=%s\nprerelease=%s\nmajor=%s\nmove-major=%s\ntags=%s\n' \
  "$cargo_version" "$kind" "$prerelease" "$major" "$move" "$tags"
