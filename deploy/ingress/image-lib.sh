# Images for the testbed's ingress controllers: built with buildah from a context directory (no
# registry, no Docker engine), kept as OCI archives beside the project's images and imported into
# every running node's containerd. Sourced by deploy/ingress/*-image.sh after
# deploy/local-cluster/lib.sh.
# shellcheck shell=bash

B=(buildah --root "$DRAINWATCH_K8S_CACHE/buildah/root" --runroot "$DRAINWATCH_K8S_CACHE/buildah/runroot" --storage-driver vfs)

# images_lock: the ingress images are built one at a time, until the calling script exits. Two
# lanes of the cluster run can ask for the same image at once (e2e-ingress and
# docker-run-cluster's managed arm both run `make traefik-image`), and on a fresh checkout both
# find the archive older than its Dockerfile: two builds of one tag are one image id
# (--timestamp 0), and the first one's `rmi` removed it under the other's push ("locating image
# with ID ...: image not known"). The second, once it holds the lock, finds the archive fresh.
images_lock() {
  mkdir -p "$IMAGES_DIR"
  exec 7>"$IMAGES_DIR/.ingress-images.lock"
  flock 7
}

# archive_fresh ARCHIVE INPUT...: whether ARCHIVE exists and is newer than every input.
archive_fresh() {
  local archive=$1 input
  shift
  [ -f "$archive" ] || return 1
  for input in "$@"; do
    [ "$archive" -nt "$input" ] || return 1
  done
}

# build_archive IMAGE ARCHIVE CONTAINERFILE CONTEXT: CONTAINERFILE built over CONTEXT as IMAGE,
# written to ARCHIVE (atomically: a half-written archive never looks fresh).
build_archive() {
  local image=$1 archive=$2 containerfile=$3 ctx=$4
  # buildah creates podman's default store when it is absent; remove only what it created.
  [ -e /var/lib/containers ] || trap 'rm -rf /var/lib/containers' EXIT
  mkdir -p "$IMAGES_DIR"
  "${B[@]}" bud --quiet --format oci --timestamp 0 -f "$containerfile" -t "$image" "$ctx" >/dev/null
  rm -f "$archive.tmp"
  "${B[@]}" push --quiet "$image" "oci-archive:$archive.tmp:$image"
  "${B[@]}" rmi -f "$image" >/dev/null 2>&1 || true
  mv "$archive.tmp" "$archive"
  log "built $image ($archive, $(stat -c%s "$archive") bytes)"
}

# import_archive IMAGE ARCHIVE: ARCHIVE into every running node's containerd, IMAGE checked
# present after; no running node is an error (make cluster-up first).
import_archive() {
  local image=$1 archive=$2 n imported=0
  for n in $(seq 1 "$MAX_NODES"); do
    [ -S "$(node_sock "$n")" ] || continue
    ctr_node "$n" images import --platform linux/amd64 "$archive" >/dev/null \
      || die "importing $archive into node$n's containerd failed"
    ctr_node "$n" images ls -q | grep -xF "$image" >/dev/null || die "node$n: $image not present after import"
    imported=$((imported + 1))
  done
  [ "$imported" -gt 0 ] || die "no running node of the local cluster to import into (make cluster-up)"
  log "imported into $imported node(s): $image"
}
