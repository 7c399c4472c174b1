#!/usr/bin/env bash
# Installs what the CI-product tests need, idempotently, outside the repository:
#   - Debian's chromium (renders the job summary's Mermaid timeline headless),
#   - a Python venv with junitparser (a real JUnit consumer's parser), pytest, PyYAML and
#     check-jsonschema (the GitLab and Buildkite schemas it vendors),
#   - Debian's busybox (the shell and applets of an Alpine job image: test_other_ci.py),
#     groovy (runs docs/other-ci.md's Jenkinsfile with stand-in steps) and shellcheck (its
#     snippets' shell),
#   - the npm packages of tests/ci/package-lock.json (GitHub's OpenAPI description, recorded
#     fixtures and webhook payloads, ajv, mermaid, marked),
#   - actionlint, built from the Go module proxy.
# Usage: .ci/setup-test-tools.sh [chromium|python|node|actionlint]...   (default: all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mkdir -p "$DRAINWATCH_CACHE"

parts=("$@")
has() { ((${#parts[@]} == 0)) || [[ " ${parts[*]} " == *" $1 "* ]]; }

if has chromium; then
  # Debian's chromium here; a GitHub-hosted Ubuntu runner already has Chromium or Chrome.
  if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
     && ! command -v google-chrome >/dev/null 2>&1; then
    echo "setup-test-tools: installing chromium (Debian)"
    if [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ]]; then
      apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium >/dev/null \
      || { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium >/dev/null; }
  fi
fi

debs=()
for tool in busybox groovy shellcheck; do command -v "$tool" >/dev/null 2>&1 || debs+=("$tool"); done
if has python && ((${#debs[@]} > 0)); then
  echo "setup-test-tools: installing ${debs[*]} (Debian)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${debs[@]}" >/dev/null \
    || { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${debs[@]}" >/dev/null; }
fi

if has python; then
  stamp="$CI_VENV/.drainwatch-packages"
  if [[ ! -x "$CI_VENV/bin/python" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "${PY_PACKAGES[*]}" ]]; then
    echo "setup-test-tools: python venv at $CI_VENV (${PY_PACKAGES[*]})"
    # Debian's python3 is the interpreter the venv is made from (python3-venv ships with it).
    py=/usr/bin/python3; [[ -x $py ]] || py=python3
    "$py" -m venv "$CI_VENV" 2>/dev/null || {
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q python3-venv >/dev/null
      "$py" -m venv "$CI_VENV"
    }
    "$CI_VENV/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
    echo "${PY_PACKAGES[*]}" > "$stamp"
  fi
fi

if has node; then
  lock="$REPO_ROOT/tests/ci/package-lock.json"
  stamp="$CI_NODE/.drainwatch-lock.sha256"
  sum="$(sha256sum "$lock" | cut -d' ' -f1)"
  if [[ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]] || [[ ! -d "$CI_NODE/node_modules/mermaid" ]]; then
    echo "setup-test-tools: npm ci in $CI_NODE"
    mkdir -p "$CI_NODE"
    cp "$REPO_ROOT/tests/ci/package.json" "$lock" "$CI_NODE/"
    (cd "$CI_NODE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$sum" > "$stamp"
  fi
fi

if has actionlint; then
  # Go from the official tarball lives in /usr/local/go, which a non-login shell may not have.
  command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
  if [[ "$("$CI_TOOLS_BIN/actionlint" -version 2>/dev/null | head -1)" != "$ACTIONLINT_VERSION" ]]; then
    echo "setup-test-tools: go install actionlint@$ACTIONLINT_VERSION into $CI_TOOLS_BIN"
    mkdir -p "$CI_TOOLS_BIN"
    GOBIN="$CI_TOOLS_BIN" GOFLAGS=-mod=mod go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
  fi
fi
echo "setup-test-tools: ready (cache $DRAINWATCH_CACHE)"
