#!/usr/bin/env bash
# `make example-images`: builds the example services (cargo examples good-shutdown and
# bad-shutdown: HTTP/1.1 and h2c; stuck-shutdown: stops accepting on SIGTERM; grpc-good and grpc-bad: gRPC; ws-good and ws-bad: WebSocket;
# each static musl) and the drainwatch image of this checkout under a tag of its own (so that a
# branch's client never replaces the image other runs on the shared cluster use),
# writes each as an OCI archive beside the project image, and imports them into every node's
# containerd of the running local cluster. No registry: the manifests use IfNotPresent.
#
#   EXAMPLES_TAG   tag of the example images (default: the crate version)
#   DW_IMAGE       the drainwatch image to build and import (default <repo>:<version>-attach)
#   SKIP_CARGO=1   reuse the binaries already built
#   EXAMPLES       the examples to build (default: good-shutdown bad-shutdown stuck-shutdown grpc-good grpc-bad ws-good ws-bad;
#                  `none`: only the drainwatch image, e.g. a client change under its own DW_IMAGE tag)
#   DW_BIN         the drainwatch binary to put in its image (default: the musl build of
#                  TARGET_DIR in the profile image.sh uses, DRAINWATCH_IMAGE_PROFILE or release; a
#                  copy keeps a shared target dir's later builds out of the image)
#   SKIP_DW_IMAGE=1  build and import only the examples (the drainwatch image stays as imported)
#   NO_IMPORT=1    only the OCI archives (for kind, which loads them itself: make test-action-kind)
#
# The drainwatch binary is the one image.sh built when the project image archive is stamped
# with this (clean) checkout and profile and the binary has not been rebuilt since; otherwise it is built
# on its own, as image.sh builds it. Never in the same cargo run as the examples: examples
# bring in the dev-dependencies, whose features would unify into a second, different release
# build of drainwatch (not the binary of the project image).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

VERSION=$(crate_version)
TARGET=x86_64-unknown-linux-musl
CARGO=${CARGO:-cargo}
TARGET_DIR=${CARGO_TARGET_DIR:-$(cd "$REPO_ROOT" && "$CARGO" metadata --format-version 1 --no-deps 2>/dev/null \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo "$REPO_ROOT/target")}
PROFILE=$(image_profile)
REL=$TARGET_DIR/$TARGET/$PROFILE
EXAMPLES_TAG=${EXAMPLES_TAG:-$VERSION}
DW_IMAGE=${DW_IMAGE:-$IMAGE_REPO:$VERSION-attach}
if [ "${EXAMPLES:-}" = none ]; then
  EXS=()
else
  read -r -a EXS <<<"${EXAMPLES:-good-shutdown bad-shutdown stuck-shutdown grpc-good grpc-bad ws-good ws-bad}"
fi

# Every example image: one cargo example each, in one cargo run, under the example-image
# profile (Cargo.toml: release's settings, kept as a profile of its own so that the examples'
# dependency tree, tonic's among them, never evicts the project binary's release build).
EXAMPLE_PROFILE=test-image
EXAMPLE_DIR=$TARGET_DIR/$TARGET/$EXAMPLE_PROFILE/examples
EXAMPLE_ARGS=()
for ex in "${EXS[@]}"; do EXAMPLE_ARGS+=(--example "$ex"); done

BIN=${DW_BIN:-$REL/drainwatch}
PROJECT_ARCHIVE=$(image_archive)

# image_sh_built: $BIN is what image.sh put into the project image archive of this checkout
# and profile.
# A dirty revision names no one tree, so it never counts as a match.
image_sh_built() {
  local rev
  rev=$(checkout_revision)
  [ -x "$BIN" ] && [ -f "$PROJECT_ARCHIVE" ] && [ "$BIN" -ot "$PROJECT_ARCHIVE" ] &&
    [ "$rev" != unknown ] && [ "${rev%-dirty}" = "$rev" ] &&
    [ "$(cat "$PROJECT_ARCHIVE.revision" 2>/dev/null)" = "$(image_stamp)" ]
}

if [ "${SKIP_CARGO:-0}" != 1 ]; then
  if [ "${SKIP_DW_IMAGE:-0}" = 1 ]; then
    log "SKIP_DW_IMAGE=1: not building the drainwatch image"
  elif image_sh_built; then
    log "reusing $BIN: image.sh built it from this checkout ($(cat "$PROJECT_ARCHIVE.revision"))"
  else
    log "cargo build --profile $PROFILE --target $TARGET --bin drainwatch"
    (cd "$REPO_ROOT" && CARGO_TARGET_DIR=$TARGET_DIR "$CARGO" build --profile "$PROFILE" --target "$TARGET" --bin drainwatch)
  fi
  # No example asked for: no cargo run (without --example it would build the crate itself).
  if [ "${#EXS[@]}" -gt 0 ]; then
    log "cargo build --profile $EXAMPLE_PROFILE --target $TARGET ${EXAMPLE_ARGS[*]}"
    (cd "$REPO_ROOT" && CARGO_TARGET_DIR=$TARGET_DIR "$CARGO" build --profile "$EXAMPLE_PROFILE" \
      --target "$TARGET" "${EXAMPLE_ARGS[@]}")
  fi
fi

B=(buildah --root "$DRAINWATCH_K8S_CACHE/buildah/root" --runroot "$DRAINWATCH_K8S_CACHE/buildah/runroot" --storage-driver vfs)
# buildah keeps a blob-info cache in /var/lib/containers whatever --root says: remove it after a
# build that created it (set on the first build, so a run that builds nothing removes nothing
# another tool may have created meanwhile).
BUILT_ANY=0
epoch=$(git -C "$REPO_ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$IMAGES_DIR"

# build BIN NAME_IN_CONTEXT DOCKERFILE IMAGE ARCHIVE
build() {
  local bin=$1 as=$2 dockerfile=$3 image=$4 archive=$5 ctx input
  [ -x "$bin" ] || die "no binary at $bin"
  # Up to date: the archive is newer than everything it is built from (a rerun, or the
  # walk-through's `make example-images` after CI's, builds nothing).
  local fresh=1
  for input in "$bin" "$dockerfile" "$REPO_ROOT/scripts/image-context.sh"; do
    [ -f "$archive" ] && [ "$archive" -nt "$input" ] || fresh=0
  done
  if [ "$fresh" = 1 ]; then
    log "up to date: $image ($archive)"
    return
  fi
  if [ "$BUILT_ANY" = 0 ]; then
    BUILT_ANY=1
    [ -e /var/lib/containers ] || trap 'rm -rf /var/lib/containers' EXIT
  fi
  if file "$bin" 2>/dev/null | grep 'dynamically linked' >/dev/null; then die "$bin is dynamically linked"; fi
  ctx=$(mktemp -d)
  if [ "$as" = drainwatch ]; then "$REPO_ROOT/scripts/image-context.sh" "$ctx" "$bin"; else cp "$bin" "$ctx/$as"; fi
  "${B[@]}" bud --quiet --format oci --timestamp "$epoch" -f "$dockerfile" -t "$image" "$ctx" >/dev/null
  rm -f "$archive.tmp"
  "${B[@]}" push --quiet "$image" "oci-archive:$archive.tmp:$image"
  "${B[@]}" rmi -f "$image" >/dev/null 2>&1 || true
  mv "$archive.tmp" "$archive"
  rm -rf "$ctx"
  log "built $image ($archive, $(stat -c%s "$archive") bytes)"
}

declare -A ARCHIVES=()
for ex in "${EXS[@]}"; do
  img=ghcr.io/drainwatch/example-$ex:$EXAMPLES_TAG
  arc=$IMAGES_DIR/example-$ex-$EXAMPLES_TAG.oci.tar
  build "$EXAMPLE_DIR/$ex" app "$REPO_ROOT/examples/k8s/Dockerfile" "$img" "$arc"
  ARCHIVES[$img]=$arc
done
if [ "${SKIP_DW_IMAGE:-0}" != 1 ]; then
  arc=$IMAGES_DIR/drainwatch-${DW_IMAGE##*:}.oci.tar
  build "$BIN" drainwatch "$REPO_ROOT/Dockerfile" "$DW_IMAGE" "$arc"
  ARCHIVES[$DW_IMAGE]=$arc
fi

if [ "${NO_IMPORT:-0}" = 1 ]; then
  log "built (not imported): ${ARCHIVES[*]}"
  exit 0
fi
imported=0
for n in $(seq 1 "$MAX_NODES"); do
  [ -S "$(node_sock "$n")" ] || continue
  for img in "${!ARCHIVES[@]}"; do
    ctr_node "$n" images import --platform linux/amd64 "${ARCHIVES[$img]}" >/dev/null \
      || die "importing ${ARCHIVES[$img]} into node$n's containerd failed"
    ctr_node "$n" images ls -q | grep -xF "$img" >/dev/null || die "node$n: $img not present after import"
  done
  imported=$((imported + 1))
done
[ "$imported" -gt 0 ] || die "no running node of the local cluster to import into (make cluster-up)"
log "imported into $imported node(s): ${!ARCHIVES[*]}"
