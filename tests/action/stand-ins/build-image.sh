#!/usr/bin/env bash
# Stand-in for examples/k8s/build-image.sh: the example's image as `make example-images` built
# it (an OCI archive beside the project image), loaded into `docker` (podman) and tagged as the
# workflow asks. The real script's cargo release build would start cold in act's copy of the
# workspace (minutes); its `docker build` of a FROM scratch image is what was built already.
set -euo pipefail
service=$1 image=$2
archive="${DW_IMAGES_DIR:?}/example-$service-${DW_VERSION:?}.oci.tar"
[ -f "$archive" ] || { echo "build-image stand-in: no $archive (make example-images)" >&2; exit 1; }
docker load -q -i "$archive" >/dev/null
docker tag "ghcr.io/drainwatch/example-$service:$DW_VERSION" "$image"
echo "build-image stand-in: $image from $archive"
