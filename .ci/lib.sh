# Shared paths of the CI scripts: every tool lives in a cache outside the repository, so a
# checkout stays clean and a second run reuses what the first installed.
DRAINWATCH_CACHE="${DRAINWATCH_CACHE:-/var/cache/drainwatch}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$DRAINWATCH_CACHE/cargo-target}"
CI_VENV="$DRAINWATCH_CACHE/ci-venv"
CI_NODE="$DRAINWATCH_CACHE/ci-node"
CI_TOOLS_BIN="$DRAINWATCH_CACHE/tools/bin"
# Pinned tool versions (bump deliberately; each is installed from its own registry).
ACTIONLINT_VERSION="v1.7.12"
PY_PACKAGES=(junitparser==5.0.3 pytest==9.2.0 PyYAML==6.0.3 check-jsonschema==0.39.0)
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
