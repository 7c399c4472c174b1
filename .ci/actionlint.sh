#!/usr/bin/env bash
# Lints the workflows (.github/workflows and the documented examples/workflows; through `uses: ./`
# and `uses: ./setup` also the inputs of action.yml and setup/action.yml) with
# actionlint built from the Go module proxy; shellcheck, when installed, checks every run: script.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
"$(dirname "$0")/setup-test-tools.sh" actionlint >/dev/null
cd "$REPO_ROOT"
"$CI_TOOLS_BIN/actionlint" -no-color .github/workflows/*.yml examples/workflows/*.yml tests/action/workflows/*.yml
echo "actionlint: $(ls .github/workflows/*.yml examples/workflows/*.yml tests/action/workflows/*.yml | wc -l) workflows clean"
