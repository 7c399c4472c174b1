#!/usr/bin/env bash
# Builds the sandbox (pause) image from pause.c: a static binary in a one-layer OCI image written
# by hand (no registry, no builder needed), saved as an OCI archive named $PAUSE_IMAGE.
# Output: $IMAGES_DIR/pause-oci.tar (rebuilt only when pause.c or this script changes).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mkdir -p "$IMAGES_DIR"
stamp=$(cat "$LC_DIR/pause.c" "$0" | sha256sum | cut -c1-16)-$PAUSE_IMAGE
if [ -f "$PAUSE_ARCHIVE" ] && [ "$(cat "$PAUSE_ARCHIVE.stamp" 2>/dev/null)" = "$stamp" ]; then
  log "pause image: cached $PAUSE_ARCHIVE"; exit 0
fi
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
mkdir -p "$w/rootfs" "$w/oci/blobs/sha256"
gcc -Os -Wall -Werror -static -DVERSION="\"drainwatch-pause ${PAUSE_IMAGE##*:}\"" -o "$w/rootfs/pause" "$LC_DIR/pause.c"
strip "$w/rootfs/pause"
blob() { # FILE -> prints "digest size" and stores the blob
  local d; d=$(sha256sum "$1" | cut -d' ' -f1); cp "$1" "$w/oci/blobs/sha256/$d"; echo "$d $(stat -c%s "$1")"; }
tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$w/rootfs" -cf "$w/layer.tar" pause
diff_id=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
gzip -n -9 -c "$w/layer.tar" > "$w/layer.tgz"
read -r lay lsz < <(blob "$w/layer.tgz")
printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$diff_id" > "$w/config.json"
read -r cfg csz < <(blob "$w/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%d}]}' \
  "$cfg" "$csz" "$lay" "$lsz" > "$w/manifest.json"
read -r man msz < <(blob "$w/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$man" "$msz" "$PAUSE_IMAGE" "${PAUSE_IMAGE##*:}" > "$w/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' > "$w/oci/oci-layout"
# A file of this build's own, then renamed: the cluster run's image phase and the kind node
# image's build (beside it in .ci/run) may both build the image at once.
tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$w/oci" -cf "$PAUSE_ARCHIVE.tmp.$$" oci-layout index.json blobs
mv "$PAUSE_ARCHIVE.tmp.$$" "$PAUSE_ARCHIVE"
echo "$stamp" > "$PAUSE_ARCHIVE.stamp"
log "pause image: $PAUSE_IMAGE -> $PAUSE_ARCHIVE ($(stat -c%s "$PAUSE_ARCHIVE") bytes)"
