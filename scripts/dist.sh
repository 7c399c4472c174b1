#!/usr/bin/env bash
# `make dist`: everything a release ships, built here, under one directory (outside the repo):
#   $DIST_DIR (default /var/cache/drainwatch/dist/<version>/)
#     drainwatch-x86_64-linux-musl, drainwatch-aarch64-linux-musl   static binaries
#     drainwatch-<arch>-linux-musl.sha256, SHA256SUMS                 sha256sum format
#     drainwatch-v<version>.oci.tar   one OCI archive: a manifest list (linux/amd64, linux/arm64)
#     drainwatch-v<version>.cdx.json  the SBOM (CycloneDX JSON, cargo-cyclonedx)
#     image-sizes.txt, dist.json      per-architecture image size, timings, tool versions
# Both binaries are cross-built with cargo-zigbuild (zig as C compiler and linker: ring
# compiles C), so x86_64 and aarch64 come from one toolchain; release.yml runs this same script.
# Needs: scripts/dist-setup.sh (run first; prints the tools dir), buildah.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
T0=$(date +%s)
log() { printf '[dist %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; }
die() { echo "dist: error: $*" >&2; exit 2; }

VERSION=$(sed -n '/^\[package\]/,/^\[/{s/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p}' Cargo.toml | head -1)
DIST_DIR=${DIST_DIR:-${DRAINWATCH_CACHE:-/var/cache/drainwatch}/dist/$VERSION}
IMAGE=${DIST_IMAGE:-ghcr.io/drainwatch/drainwatch:v$VERSION}
DIST_TOOLS=$(scripts/dist-setup.sh)
export PATH="$DIST_TOOLS/bin:$DIST_TOOLS/venv/bin:$PATH"
# Its own cache outside the repository (never $REPO_ROOT/target): the zig-built release must not
# share cargo-target with image.sh's musl-gcc build, or each would rebuild the other's (the C
# compiler's env is in the build scripts' fingerprints). The `dist` profile (Cargo.toml) is release
# with fat LTO and one codegen unit: the shipped binaries only.
TARGET_DIR=${CARGO_TARGET_DIR:-${DRAINWATCH_CACHE:-/var/cache/drainwatch}/target-release}
export CARGO_TARGET_DIR=$TARGET_DIR
mkdir -p "$DIST_DIR"
rm -f "$DIST_DIR"/drainwatch-* "$DIST_DIR"/SHA256SUMS

# 1. the binaries. arch: the asset's name (uname -m, what action.yml maps runner.arch to);
#    platform: the image's.
declare -A TRIPLE=([x86_64]=x86_64-unknown-linux-musl [aarch64]=aarch64-unknown-linux-musl)
declare -A PLATFORM=([x86_64]=linux/amd64 [aarch64]=linux/arm64)
declare -A ELF=([x86_64]="x86-64" [aarch64]="ARM aarch64")
declare -A SECS
# aarch64 first: it is the build nothing else here exercises.
# DIST_BIN_<arch> (DIST_BIN_x86_64, DIST_BIN_aarch64): take that architecture's binary as built
# elsewhere instead of building it (dist.json records which); checked like a built one.
declare -A PREBUILT
for arch in aarch64 x86_64; do
  t=${TRIPLE[$arch]}
  var=DIST_BIN_$arch
  if [ -n "${!var:-}" ]; then
    bin=${!var}
    [ -x "$bin" ] || die "$var=$bin is not an executable file"
    log "$arch: the prebuilt $bin ($var), not built by this run"
    PREBUILT[$arch]=$bin SECS[$arch]=None
  else
    log "cargo zigbuild --profile dist --locked --target $t (CARGO_TARGET_DIR=$TARGET_DIR)"
    s=$(date +%s)
    cargo zigbuild --quiet --profile dist --locked --target "$t" --bin drainwatch
    SECS[$arch]=$(( $(date +%s) - s ))
    bin=$TARGET_DIR/$t/dist/drainwatch
  fi
  desc=$(file -b "$bin")
  case "$desc" in *"${ELF[$arch]}"*) ;; *) die "$bin is not ${ELF[$arch]}: $desc" ;; esac
  case "$desc" in *"statically linked"* | *"static-pie linked"*) ;; *) die "$bin is not static: $desc" ;; esac
  asset=drainwatch-$arch-linux-musl
  cp "$bin" "$DIST_DIR/$asset"
  (cd "$DIST_DIR" && sha256sum "$asset" > "$asset.sha256")
done
(cd "$DIST_DIR" && cat drainwatch-*-linux-musl.sha256 > SHA256SUMS)
log "binaries: $(cd "$DIST_DIR" && stat -c '%n %s bytes;' drainwatch-*-linux-musl | tr '\n' ' ')"

# 2. the SBOM: the dependency graph of the binary as released (normal dependencies, no build
#    or dev ones), one per musl target, written beside Cargo.toml by cargo-cyclonedx and moved out
#    of the repo. The two targets' components must be the same set: one SBOM then describes both
#    binaries (a difference stops the build, naming it, rather than shipping a wrong SBOM).
sbom=drainwatch-v$VERSION.cdx
for arch in x86_64 aarch64; do
  log "cargo cyclonedx --target ${TRIPLE[$arch]}"
  rm -f "$sbom.json"
  cargo cyclonedx --quiet --format json --no-build-deps --all --override-filename "$sbom" --target "${TRIPLE[$arch]}"
  [ -s "$sbom.json" ] || die "cargo cyclonedx wrote no $sbom.json"
  mv "$sbom.json" "$DIST_DIR/$sbom.$arch.json"
done
python3 - "$DIST_DIR/$sbom.x86_64.json" "$DIST_DIR/$sbom.aarch64.json" <<'PY'
import json, sys
sets = [{c.get("purl") or c["name"] for c in json.load(open(p)).get("components", [])} for p in sys.argv[1:]]
if not sets[0]:
    sys.exit("dist: error: the SBOM lists no components")
if sets[0] != sets[1]:
    sys.exit(f"dist: error: the SBOMs differ: x86_64 only {sorted(sets[0] - sets[1])}, aarch64 only {sorted(sets[1] - sets[0])}")
print(f"dist: SBOM: {len(sets[0])} components, the same for both targets", file=sys.stderr)
PY
mv "$DIST_DIR/$sbom.x86_64.json" "$DIST_DIR/$sbom.json"
rm -f "$DIST_DIR/$sbom.aarch64.json"

# 3. the image: one per platform from the Dockerfile (FROM scratch, no RUN: nothing is
#    emulated), put into one manifest list, pushed as one OCI archive. Private buildah storage.
store=$(mktemp -d "${TMPDIR:-/tmp}/drainwatch-dist-buildah.XXXXXX")
ctx=$(mktemp -d "${TMPDIR:-/tmp}/drainwatch-dist-ctx.XXXXXX")
[ -e /var/lib/containers ] && keep_containers=1 || keep_containers=0
cleanup() {
  "${B[@]}" rmi -af >/dev/null 2>&1 || true
  $SUDO rm -rf "$store" "$ctx"
  # buildah keeps a blob-info cache in /var/lib/containers whatever --root says
  [ "$keep_containers" = 1 ] || $SUDO rm -rf /var/lib/containers
}
B=(buildah)
[ "$(id -u)" = 0 ] || B=(sudo buildah)  # buildah as root, as on a GitHub runner
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
B+=(--root "$store/root" --runroot "$store/runroot" --storage-driver vfs)
trap cleanup EXIT
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source_url=$(sed -n 's/^repository[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' Cargo.toml | head -1)
licenses=$(sed -n 's/^license[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' Cargo.toml | head -1)
list=drainwatch-dist-list
"${B[@]}" manifest create "$list" >/dev/null
for arch in x86_64 aarch64; do
  scripts/image-context.sh "$ctx" "$DIST_DIR/drainwatch-$arch-linux-musl"
  log "buildah bud --platform ${PLATFORM[$arch]}"
  "${B[@]}" bud --quiet --format oci --timestamp "$epoch" --platform "${PLATFORM[$arch]}" \
    --build-arg "VERSION=$VERSION" --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
    --build-arg "SOURCE=${source_url:-unknown}" --build-arg "LICENSES=${licenses:-unknown}" \
    -f Dockerfile -t "localhost/drainwatch-dist:$arch" "$ctx" >/dev/null
  "${B[@]}" manifest add "$list" "containers-storage:localhost/drainwatch-dist:$arch" >/dev/null
done
archive=$DIST_DIR/drainwatch-v$VERSION.oci.tar
rm -f "$archive"
"${B[@]}" manifest push --quiet --all --format oci "$list" "oci-archive:$archive:$IMAGE"
[ -z "$SUDO" ] || $SUDO chown "$(id -u):$(id -g)" "$archive"

# 4. read the archive back: the index must hold both platforms; their sizes per architecture.
python3 - "$archive" "$DIST_DIR" <<'PY'
import gzip, json, sys, tarfile
archive, out = sys.argv[1], sys.argv[2]
t = tarfile.open(archive)
blob = lambda d: t.extractfile("blobs/sha256/" + d.split(":", 1)[1]).read()
idx = json.load(t.extractfile("index.json"))
lst = json.loads(blob(idx["manifests"][0]["digest"]))
if "manifests" not in lst:
    sys.exit("dist: error: the archive's image is not a manifest list")
rows = {}
for m in lst["manifests"]:
    p = m["platform"]
    man = json.loads(blob(m["digest"]))
    cfg = json.loads(blob(man["config"]["digest"]))
    if (cfg.get("architecture"), cfg.get("os")) != (p["architecture"], p["os"]):
        sys.exit(f"dist: error: config says {cfg.get('os')}/{cfg.get('architecture')}, index {p}")
    layers = [blob(l["digest"]) for l in man["layers"]]
    rows[p["architecture"]] = {
        "digest": m["digest"],
        "compressed_bytes": sum(l["size"] for l in man["layers"]),
        "uncompressed_bytes": sum(len(gzip.decompress(b)) if b[:2] == b"\x1f\x8b" else len(b) for b in layers),
    }
if sorted(rows) != ["amd64", "arm64"]:
    sys.exit(f"dist: error: the manifest list holds {sorted(rows)}, not amd64 and arm64")
mib = lambda b: f"{b / 1048576:.2f} MiB"
with open(f"{out}/image-sizes.txt", "w") as f:
    f.write("platform     layers-as-pushed  unpacked        manifest\n")
    for a, r in sorted(rows.items()):
        f.write(f"linux/{a:<6} {mib(r['compressed_bytes']):>16}  {mib(r['uncompressed_bytes']):>12}  {r['digest']}\n")
json.dump(rows, open(f"{out}/image-sizes.json", "w"), indent=2)
PY
cat "$DIST_DIR/image-sizes.txt" >&2

total=$(( $(date +%s) - T0 ))
python3 - "$DIST_DIR/dist.json" <<PY
import json, sys
json.dump({"version": "$VERSION", "image": "$IMAGE", "revision": "$revision",
  "seconds": {"total": $total, "build_x86_64": ${SECS[x86_64]}, "build_aarch64": ${SECS[aarch64]}},
  "prebuilt": {"x86_64": "${PREBUILT[x86_64]:-}" or None, "aarch64": "${PREBUILT[aarch64]:-}" or None},
  "tools": {"cargo-zigbuild": "$(cargo-zigbuild --version | awk '{print $2}')",
            "zig": "$(python3 -m ziglang version)",
            "cargo-cyclonedx": "$(cargo-cyclonedx cyclonedx --version | awk '{print $2}')",
            "buildah": "$(buildah --version | awk '{print $3}')",
            "rustc": "$(rustc --version | awk '{print $2}')"}},
  open(sys.argv[1], "w"), indent=2)
PY
log "done in ${total}s: $DIST_DIR"
ls -l "$DIST_DIR" >&2
