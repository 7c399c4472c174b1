"""What `make test-action-kind` asserts after act ran README.md's workflow as copied
(tests/action/readme-workflow.sh): the push run to main passed, uploaded its artifact and
commented nowhere; the pull request's run passed, found that push run's artifact as its baseline
(fetched from the storage without the token), compared with it, and left one comment that says
pass and links the push run."""

import argparse
import json
import os
import re

from checks import act_job, check, finish

a = argparse.ArgumentParser()
for flag in ("--work", "--push-run-id"):
    a.add_argument(flag, required=True)
args = a.parse_args()


def run(event):
    """The event's act run checked; the one artifact's unzipped directory (or None)."""
    code = open(os.path.join(args.work, f"readme-{event}.exit")).read().strip()
    _, out = act_job(event, code, os.path.join(args.work, f"act-readme-{event}.log"),
                     os.path.join(args.work, "readme-artifacts", event),
                     os.path.join(args.work, "readme-unzipped", event))
    return out


def verdict(out, event):
    v = json.load(open(os.path.join(out, "verdict.json")))
    check(v["verdict"] == "pass", f"{event}: verdict.json says pass ({v['verdict']})")
    arms = [arm["name"] for arm in v["arms"]]
    check(arms == ["rollout"], f"{event}: the README policy's one arm ran: {arms}")
    check(os.path.isfile(os.path.join(out, "rollout", "report.json")), f"{event}: the artifact holds the arm's report.json")
    return v


# --- the push to main: the baseline --------------------------------------------------------------
push = run("push")
if push:
    verdict(push, "push")
state = json.load(open(os.path.join(args.work, "readme-push-state.json")))
check(state["problems"] == [], f"push: the GitHub stand-in saw only valid calls: {state['problems']}")
bots = [c for c in state["comments"] if c["user"]["type"] == "Bot"]
check(bots == [], f"push: no comment by the action (there is no pull request): {len(bots)}")

# --- the pull request: compared with the push run -------------------------------------------------
pr = run("pr")
base_url = f"https://github.com/Codertocat/Hello-World/actions/runs/{args.push_run_id}"
if pr:
    v = verdict(pr, "pr")
    check([arm.get("baseline", {}).get("status") for arm in v["arms"]] == ["compared"],
          f"pr: the arm was judged against the push run's artifact: {[arm.get('baseline') for arm in v['arms']]}")
    cj = os.path.join(pr, "compare.json")
    if check(os.path.isfile(cj), "pr: the artifact holds compare.json"):
        c = json.load(open(cj))
        check(c["base_run"] == {"id": int(args.push_run_id), "url": base_url} and c["compared"] == 1,
              f"pr: compare.json names the push run and compared the one arm: {c['base_run']}, {c['compared']}")
state = json.load(open(os.path.join(args.work, "readme-pr-state.json")))
check(state["problems"] == [], f"pr: the GitHub stand-in saw only valid calls: {state['problems']}")
bots = [c for c in state["comments"] if c["user"]["type"] == "Bot"]
if check(len(bots) == 1, f"pr: one comment by the action: {len(bots)}"):
    body = bots[0]["body"]
    check(re.match(r"<!-- drainwatch:summary key=\S+ -->\n## ✅ drainwatch: pass", body) is not None, f"pr: the comment says pass: {body[:90]!r}")
    check(f"[run {args.push_run_id}]({base_url})" in body, "pr: the comment links the push run it was compared with")
downloads = state.get("downloads", [])
check(len(downloads) == 1 and not downloads[0]["authorization"], f"pr: the baseline zip was fetched once, without the token: {downloads}")

finish("test-action (README workflow)")
