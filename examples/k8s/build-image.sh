#!/usr/bin/env bash
# Builds an example service's image the way a project builds its own: the static binary (the
# cargo example), then `docker build` of examples/k8s/Dockerfile. examples/workflows/gate.yml
# calls it; in your workflow this step is your own `docker build -t "$IMAGE" .`.
#
# Usage: examples/k8s/build-image.sh SERVICE IMAGE     (SERVICE: good-shutdown | bad-shutdown | grpc-good | grpc-bad)
set -euo pipefail
service=$1 image=$2
target=x86_64-unknown-linux-musl
# ring (through the drainwatch library the examples sit beside) compiles C for musl.
if ! command -v x86_64-linux-musl-gcc >/dev/null 2>&1; then
  sudo apt-get install -y -q musl-tools >/dev/null
fi
rustup target add "$target" >/dev/null
# The example-image profile (Cargo.toml): release settings, as make example-images builds.
cargo build --profile test-image --locked --target "$target" --example "$service"
ctx=$(mktemp -d)
cp "${CARGO_TARGET_DIR:-target}/$target/test-image/examples/$service" "$ctx/app"
docker build -t "$image" -f "$(dirname "$0")/Dockerfile" "$ctx"
rm -rf "$ctx"
