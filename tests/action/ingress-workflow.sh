# shellcheck shell=bash
# The two workflows through an ingress on the Action's kind path, each gating the good-shutdown
# example: examples/workflows/gate-ingress.yml through a Traefik drainwatch deploys for the trial
# (examples/gate/through-ingress.toml), and examples/workflows/gate-own-ingress.yml through the
# Traefik the workflow installs itself, found by its Service (examples/k8s/traefik.yaml,
# examples/gate/through-own-ingress.toml). Sourced by tests/action/run.sh in real mode after
# README's workflow: its stand-ins, GitHub API stand-in, release assets and act settings (act_run)
# are the ones set up there.
#
# One stand-in of its own: a runner pulls the Traefik image from Docker Hub (setup/kind.sh's
# `docker pull` before `kind load`); no registry answers here, so the image `make traefik-image`
# built from the Go module proxy, under the same name, is in the runner's docker first.
# tests/action/check_ingress.py asserts what each run left.

# ingress_workflow NAME RUN_ID: act runs examples/workflows/NAME.yml as a pull request with no
# baseline on its base branch (the first run of a new workflow), on a kind cluster of its own.
ingress_workflow() {
  local name=$1 id=$2 code from
  local traefik=$DRAINWATCH_K8S_CACHE/images/traefik-$TRAEFIK_VERSION.oci.tar
  [ -f "$traefik" ] || fail "no $traefik (make traefik-image)"
  "${DOCKER[@]}" load -q -i "$traefik" >/dev/null || fail "loading $traefik into the runner's docker failed"
  # The clusters before this one are done with (an idle kind cluster loads the machine).
  for c in $(cat "$WORK/kind/clusters" 2>/dev/null); do "$DW_KIND_REAL" delete cluster --name "$c" >/dev/null 2>&1 || true; done
  curl -fsS -X POST "$MOCK/__control/reset" --data-binary "{\"seed\": 11, \"current_run\": {\"id\": $id, \"head_branch\": \"changes\", \"event\": \"pull_request\"}}" >/dev/null \
    || fail "the GitHub API stand-in did not take its reset"
  from=$(wc -l < "$WORK/kind/kind.log")
  say "act pull_request -W examples/workflows/$name.yml (a kind cluster of its own)"
  code=0
  act_run "$STAGE" pull_request "$WORK/event.json" "examples/workflows/$name.yml" "$id" "$WORK/$name-artifacts" "$WORK/act-$name.log" || code=$?
  say "act exited $code (log $WORK/act-$name.log)"
  grep -E '🏁|verdict=|artifact-url=|::error' "$WORK/act-$name.log" | sed 's/^/    /' || true
  curl -fsS "$MOCK/__control/state" > "$WORK/$name-state.json"
  "$CI_VENV/bin/python" "$REPO/tests/action/check_ingress.py" --workflow "$name" --work "$WORK" --act-exit "$code" \
    --kind-log-from "$from" --kube "$WORK/kind/last.kubeconfig" --traefik "docker.io/library/traefik:$TRAEFIK_VERSION"
}
