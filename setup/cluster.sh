#!/usr/bin/env bash
# action.yml's "Find the cluster" step: which cluster this job gates, decided once, loudly.
#
#   INPUT_CLUSTER     auto | existing | kind
#   INPUT_KUBECONFIG  a path (~/ expanded) or a kubeconfig's content; empty: the job's own
#
# Writes to $GITHUB_OUTPUT: create=true|false, kubeconfig=PATH (when existing), source=TEXT.
# A kubeconfig that exists but does not answer is an error naming it: never a silent switch to
# a new cluster. So is cluster: existing without one (named for fork pull requests, whose
# secrets GitHub leaves empty).
set -euo pipefail
mode=${INPUT_CLUSTER:-auto}
given=${INPUT_KUBECONFIG:-}
out=${GITHUB_OUTPUT:-/dev/stdout}

fail() { echo "::error title=drainwatch: cluster::$*" >&2; exit 2; }

case "$mode" in auto | existing | kind) ;; *) fail "the cluster input must be auto, existing or kind (got '$mode')" ;; esac

# A pull request from a fork gets no secrets: ${{ secrets.KUBECONFIG }} is then empty.
fork=""
if [[ "${GITHUB_EVENT_NAME:-}" == pull_request* ]] && [ -f "${GITHUB_EVENT_PATH:-}" ]; then
  fork=$(python3 - "$GITHUB_EVENT_PATH" <<'PY' 2>/dev/null || true
import json, sys
pr = json.load(open(sys.argv[1])).get("pull_request") or {}
head = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
base = ((pr.get("base") or {}).get("repo") or {}).get("full_name")
print(head if head and base and head != base else "")
PY
)
fi

kc="" source=""
if [ -n "$given" ]; then
  [ "$mode" != kind ] || fail "cluster: kind creates a new cluster, but a kubeconfig was given too: drop one of them"
  path=$given
  case "$path" in "~") path=$HOME ;; "~/"*) path="$HOME/${path#\~/}" ;; esac
  if [[ "$given" != *$'\n'* ]] && [ -f "$path" ]; then
    kc=$path source="the kubeconfig input ($path)"
  elif [[ "$given" == *$'\n'* ]] || [[ "$given" == *apiVersion* ]]; then
    kc="$RUNNER_TEMP/drainwatch/kubeconfig"
    mkdir -p "$(dirname "$kc")"
    (umask 077 && printf '%s\n' "$given" > "$kc")
    source="the kubeconfig input (content)"
  else
    fail "the kubeconfig input names $path, which is not a file (a path on the runner, or a kubeconfig's content)"
  fi
elif [ "$mode" != kind ]; then
  if [ -n "${KUBECONFIG:-}" ]; then
    kc=$KUBECONFIG source="the job's KUBECONFIG ($KUBECONFIG)"
  elif [ -f "$HOME/.kube/config" ]; then
    kc="$HOME/.kube/config" source="the job's ~/.kube/config"
  fi
fi

if [ -z "$kc" ]; then
  if [ "$mode" = existing ]; then
    if [ -n "$fork" ]; then
      fail "cluster: existing, but the kubeconfig input is empty and the job has no kubeconfig: this pull request comes from the fork $fork, and GitHub passes no secrets to those. Run the gate for forks on a cluster the job creates (drainwatch/action/setup), or skip forks (if: github.event.pull_request.head.repo.full_name == github.repository)."
    fi
    fail "cluster: existing, but the kubeconfig input is empty and the job has no kubeconfig (\$KUBECONFIG, ~/.kube/config): is the secret set?"
  fi
  echo "drainwatch: no kubeconfig in this job: creating a kind cluster (cluster: $mode)"
  if [ -n "$fork" ]; then echo "::notice title=drainwatch::no kubeconfig on this pull request from $fork: gating a new kind cluster; if you meant a kubeconfig secret, set cluster: existing"; fi
  { echo "create=true"; echo "source=a kind cluster this action created"; } >> "$out"
  exit 0
fi

# The cluster must answer now; a broken kubeconfig is not a reason to gate another cluster.
if command -v kubectl >/dev/null 2>&1; then
  if ! err=$(KUBECONFIG="$kc" kubectl --request-timeout=15s get --raw /version 2>&1 >/dev/null); then
    fail "the cluster of $source does not answer (kubectl get --raw /version: ${err//$'\n'/ }); not creating another cluster in its place"
  fi
  server=$(KUBECONFIG="$kc" kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}' 2>/dev/null || true)
  source="$source, API server ${server:-unknown}"
else
  echo "drainwatch: kubectl is not on PATH; drainwatch's preflight checks that the cluster answers"
fi
echo "drainwatch: gating the cluster of $source"
{ echo "create=false"; echo "kubeconfig=$kc"; echo "source=$source"; } >> "$out"
