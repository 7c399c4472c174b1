#!/usr/bin/env bash
# `make image`: builds the static musl drainwatch binary and the project image from the top-level
# Dockerfile, and writes it as an OCI archive (outside the repository):
#   $DRAINWATCH_K8S_CACHE/images/drainwatch-v<crate version>.oci.tar
# named ghcr.io/drainwatch/drainwatch:v<crate version> (the release's tag, drainwatch run's default). Builder: buildah (no daemon, vfs storage)
# by default, docker when BUILDER=docker or when buildah is absent and a docker engine answers.
# Also builds the pause image (mkpause.sh). Prints the image's size (uncompressed and gzipped).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IMAGE=$(project_image)
ARCHIVE=$(image_archive)
VERSION=$(crate_version)
TARGET=x86_64-unknown-linux-musl
CARGO=${CARGO:-cargo}
# where cargo puts it: CARGO_TARGET_DIR, else .cargo/config.toml's target-dir, else ./target
TARGET_DIR=${CARGO_TARGET_DIR:-$(cd "$REPO_ROOT" && "$CARGO" metadata --format-version 1 --no-deps 2>/dev/null \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo "$REPO_ROOT/target")}
PROFILE=$(image_profile)
BIN=$TARGET_DIR/$TARGET/$PROFILE/drainwatch

if [ -z "${BUILDER:-}" ]; then
  if command -v buildah >/dev/null; then BUILDER=buildah
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then BUILDER=docker
  else die "neither buildah nor a docker engine found (deploy/local-cluster/install-deps.sh installs buildah)"; fi
fi

# 1. the static binary
if [ "${SKIP_CARGO:-0}" != 1 ]; then
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -x "$TARGET" >/dev/null; then
    log "adding rust target $TARGET"; rustup target add "$TARGET"
  fi
  log "cargo build --profile $PROFILE --target $TARGET (CARGO_TARGET_DIR=$TARGET_DIR)"
  (cd "$REPO_ROOT" && CARGO_TARGET_DIR=$TARGET_DIR "$CARGO" build --profile "$PROFILE" --target "$TARGET" --bin drainwatch)
fi
[ -x "$BIN" ] || die "no binary at $BIN"
if file "$BIN" 2>/dev/null | grep 'dynamically linked' >/dev/null; then die "$BIN is dynamically linked"; fi

# 2. build context: the binary and the state dir (scripts/image-context.sh)
ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT
"$REPO_ROOT/scripts/image-context.sh" "$ctx" "$BIN"
revision=$(checkout_revision)
epoch=$(git -C "$REPO_ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
source_url=$(sed -n 's/^repository[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' "$REPO_ROOT/Cargo.toml" | head -1)
licenses=$(sed -n 's/^license[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' "$REPO_ROOT/Cargo.toml" | head -1)
build_args=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$revision" --build-arg "CREATED=$created"
            --build-arg "SOURCE=${source_url:-unknown}" --build-arg "LICENSES=${licenses:-unknown}")
mkdir -p "$IMAGES_DIR"
rm -f "$ARCHIVE.tmp"

# 3. image -> OCI archive
log "building $IMAGE with $BUILDER"
case $BUILDER in
  buildah)
    # private storage under the cache so nothing lands in /var/lib/containers
    # buildah keeps a blob-info cache in /var/lib/containers/cache whatever --root says; remove it
    # afterwards when this build created it
    [ -e /var/lib/containers ] || trap 'rm -rf "$ctx" /var/lib/containers' EXIT
    B=(buildah --root "$DRAINWATCH_K8S_CACHE/buildah/root" --runroot "$DRAINWATCH_K8S_CACHE/buildah/runroot" --storage-driver vfs)
    "${B[@]}" bud --quiet --format oci --timestamp "$epoch" -f "$REPO_ROOT/Dockerfile" -t "$IMAGE" "${build_args[@]}" "$ctx" >/dev/null
    "${B[@]}" push --quiet "$IMAGE" "oci-archive:$ARCHIVE.tmp:$IMAGE"
    "${B[@]}" rmi -f "$IMAGE" >/dev/null 2>&1 || true
    ;;
  docker)
    docker build -q -f "$REPO_ROOT/Dockerfile" -t "$IMAGE" "${build_args[@]}" "$ctx" >/dev/null
    docker save -o "$ARCHIVE.tmp" "$IMAGE"
    ;;
  *) die "unknown BUILDER=$BUILDER (buildah|docker)";;
esac
mv "$ARCHIVE.tmp" "$ARCHIVE"
image_stamp > "$ARCHIVE.revision"

# 4. the pause image too (cheap, cached)
"$LC_DIR/mkpause.sh"

# 5. sizes, read back from the archive: layers uncompressed (the root filesystem as unpacked on a
# node) and gzipped (as stored in the archive and as a registry would serve it)
read -r unc gz < <(python3 - "$ARCHIVE" <<'PY'
import gzip, json, sys, tarfile
t = tarfile.open(sys.argv[1])
def blob(d):
    return t.extractfile("blobs/sha256/" + d.split(":", 1)[1]).read()
names = t.getnames()
if "index.json" in names:
    idx = json.load(t.extractfile("index.json"))
    man = json.loads(blob(idx["manifests"][0]["digest"]))
    if man.get("manifests"):  # an index inside the index
        man = json.loads(blob(man["manifests"][0]["digest"]))
    layers = [blob(l["digest"]) for l in man["layers"]]
else:  # docker save without an OCI layout
    man = json.load(t.extractfile("manifest.json"))[0]
    layers = [t.extractfile(l).read() for l in man["Layers"]]
unc = sum(len(gzip.decompress(b)) if b[:2] == b"\x1f\x8b" else len(b) for b in layers)
gz = sum(len(b) if b[:2] == b"\x1f\x8b" else len(gzip.compress(b, 9)) for b in layers)
print(unc, gz)
PY
)
mib() { awk -v b="$1" 'BEGIN{printf "%.2f MiB", b/1048576}'; }
log "image $IMAGE"
log "  archive  $ARCHIVE ($(stat -c%s "$ARCHIVE") bytes)"
log "  size     uncompressed $unc bytes ($(mib "$unc")), gzipped $gz bytes ($(mib "$gz")); binary $(stat -c%s "$BIN") bytes"
log "  revision $revision, profile $PROFILE"
