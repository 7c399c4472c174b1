# README.md's "Gate every pull request" workflow as a user copies it, on the Action's kind path.
# Sourced by tests/action/run.sh in real mode after the gate matrix: its stand-ins, GitHub API
# stand-in, release assets and act settings (act_run) are the ones set up there.
#
# A user's repository (tests/action/user_repo.py): the README's workflow and policy verbatim, a
# Dockerfile and k8s/ manifests of a service that drains correctly. Two runs, as GitHub makes them:
#   1. a push to main: the gate passes and uploads its artifact, which is the baseline;
#   2. a pull request against main: the Action finds that push run's artifact (the stand-in serves
#      the push run's own zip from act's artifact server), compares, passes and comments.
# tests/action/check_readme.py asserts both.

readme_workflow() {
  USER_REPO=$WORK/user-repo
  mkdir -p "$USER_REPO"
  python3 "$REPO/tests/action/user_repo.py" "$REPO" "$USER_REPO" "$VERSION" >/dev/null
  # The Dockerfile's base: the example service's image, in the runner's docker.
  "${DOCKER[@]}" load -q -i "$DRAINWATCH_K8S_CACHE/images/example-good-shutdown-$VERSION.oci.tar" >/dev/null
  git -C "$USER_REPO" init -q -b main
  git -C "$USER_REPO" add -A
  git -C "$USER_REPO" -c user.name=test -c user.email=test@localhost commit -qm "my-service"
  git -C "$USER_REPO" remote add origin https://github.com/Codertocat/Hello-World

  # The events GitHub sends (recorded examples), on the README's branch: a push to main and a
  # pull request whose base is main.
  python3 - "$CI_NODE/node_modules/@octokit/webhooks-examples/api.github.com/index.json" "$WORK/readme-push.json" "$WORK/readme-pr.json" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
examples = {e["name"]: e["examples"] for e in index}
push = dict(examples["push"][0], ref="refs/heads/main")
push["repository"] = dict(push["repository"], default_branch="main", master_branch="main")
pr = next(e for e in examples["pull_request"] if e["action"] == "opened")
pr = json.loads(json.dumps(pr))
pr["pull_request"]["base"]["ref"] = "main"
pr["repository"]["default_branch"] = "main"
json.dump(push, open(sys.argv[2], "w"))
json.dump(pr, open(sys.argv[3], "w"))
PY

  local push_id=$((RUN_ID + 1)) pr_id=$((RUN_ID + 2)) code zip
  curl -fsS -X POST "$MOCK/__control/reset" --data-binary "{\"seed\": 7, \"current_run\": {\"id\": $push_id, \"head_branch\": \"main\", \"event\": \"push\"}}" >/dev/null
  say "README's workflow, as copied: act push (main), a kind cluster of its own"
  code=0
  act_run "$USER_REPO" push "$WORK/readme-push.json" .github/workflows/drainwatch.yml "$push_id" "$WORK/readme-artifacts/push" "$WORK/act-readme-push.log" || code=$?
  say "act push exited $code (log $WORK/act-readme-push.log)"
  echo "$code" > "$WORK/readme-push.exit"
  curl -fsS "$MOCK/__control/state" > "$WORK/readme-push-state.json"

  # The push run's artifact is the pull request's baseline.
  zip=$(find "$WORK/readme-artifacts/push" -name '*.zip' | head -1)
  python3 - "$push_id" "$zip" > "$WORK/readme-reset.json" <<'PY'
import json, os, sys
push_id, zip_path = int(sys.argv[1]), sys.argv[2]
runs = []
if zip_path:
    name = os.path.basename(zip_path)[: -len(".zip")]
    runs = [{"id": push_id, "head_branch": "main", "event": "push", "conclusion": "success",
             "artifacts": [{"name": name, "zip": zip_path}]}]
print(json.dumps({"seed": 9, "current_run": {"id": push_id + 1, "head_branch": "changes", "event": "pull_request"}, "base_runs": runs}))
PY
  curl -fsS -X POST "$MOCK/__control/reset" --data-binary "@$WORK/readme-reset.json" >/dev/null
  say "README's workflow, as copied: act pull_request (base main)"
  code=0
  act_run "$USER_REPO" pull_request "$WORK/readme-pr.json" .github/workflows/drainwatch.yml "$pr_id" "$WORK/readme-artifacts/pr" "$WORK/act-readme-pr.log" || code=$?
  say "act pull_request exited $code (log $WORK/act-readme-pr.log)"
  echo "$code" > "$WORK/readme-pr.exit"
  curl -fsS "$MOCK/__control/state" > "$WORK/readme-pr-state.json"

  "$CI_VENV/bin/python" "$REPO/tests/action/check_readme.py" --work "$WORK" --push-run-id "$push_id"
}
