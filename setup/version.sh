#!/usr/bin/env bash
# The version of this checkout of the action (Cargo.toml's package version), so that action,
# binary and image are one release: a workflow pinned to @v0.2.0 or to a commit gets that
# commit's version, never a floating tag. (github.action_ref is unreliable inside composite
# actions, actions/runner#2473, so the version is read from the action's own files.)
set -euo pipefail
toml="$(cd "$(dirname "$0")/.." && pwd)/Cargo.toml"
v=$(sed -n '/^\[package\]/,/^\[/{s/^version[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p}' "$toml" | head -1)
[ -n "$v" ] || { echo "::error title=drainwatch::no package version in $toml" >&2; exit 2; }
echo "$v"
