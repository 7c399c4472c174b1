#!/usr/bin/env bash
# Installs cargo-fuzz, pinned, under the cache (never in the repository or ~/.cargo). Idempotent:
# an installed binary of the pinned version is reused. The nightly toolchain cargo-fuzz needs
# (-Z sanitizer=address) is installed by rustup when missing.
set -euo pipefail
CARGO_FUZZ_VERSION=${CARGO_FUZZ_VERSION:-0.13.1}
ROOT=${FUZZ_TOOLS:-${DRAINWATCH_CACHE:-/var/cache/drainwatch}/fuzz-tools}
bin=$ROOT/bin/cargo-fuzz
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz-setup: installing the nightly toolchain"
  rustup toolchain install nightly --profile minimal
fi
if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -qF " $CARGO_FUZZ_VERSION"; then
  exit 0
fi
echo "fuzz-setup: installing cargo-fuzz $CARGO_FUZZ_VERSION into $ROOT"
# Built with stable: the locked rustix 0.36 of cargo-fuzz 0.13.1 enables rustc_attrs under a
# nightly compiler, which today's nightly refuses. Only running the fuzzers needs nightly.
# Its own target dir: the install build never mixes with drainwatch's.
CARGO_TARGET_DIR=$ROOT/build cargo +stable install cargo-fuzz --version "$CARGO_FUZZ_VERSION" \
  --locked --root "$ROOT"
rm -rf "$ROOT/build"
"$bin" --version
