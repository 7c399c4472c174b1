#!/usr/bin/env bash
# The CI-product tests: JUnit through junitparser, the job summary rendered in headless
# Chromium (mermaid, marked), the PR comment against a GitHub stand-in validated by GitHub's
# OpenAPI description, and the actions' static checks (make test-action runs them under act).
# Installs its tools first (idempotent).
#
# Usage: .ci/test-ci-product.sh [pytest args...]
# Output kept for people (screenshot, rendered summary): $DRAINWATCH_TEST_OUTPUT
#   (default $CARGO_TARGET_DIR/ci-test-output).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
"$(dirname "$0")/setup-test-tools.sh" chromium python node

# The tests run the binary of this checkout. The cargo target directory may be shared with
# other checkouts, so the binary is copied out right after the build and checked.
cargo build --quiet
bin_dir="$(mktemp -d)"
trap 'rm -rf "$bin_dir"' EXIT
cp "$CARGO_TARGET_DIR/debug/drainwatch" "$bin_dir/drainwatch"
if ! "$bin_dir/drainwatch" ci --help >/dev/null 2>&1; then
  echo "test-ci-product: $CARGO_TARGET_DIR/debug/drainwatch is not this checkout's build (another checkout built over it); set CARGO_TARGET_DIR to a private directory" >&2
  exit 2
fi
export DRAINWATCH_BIN="$bin_dir/drainwatch"
export DRAINWATCH_TEST_OUTPUT="${DRAINWATCH_TEST_OUTPUT:-$CARGO_TARGET_DIR/ci-test-output}"
"$CI_VENV/bin/python" -m pytest -p no:cacheprovider tests/ci "$@"
echo "test-ci-product: screenshot and rendered summary in $DRAINWATCH_TEST_OUTPUT"
