"""What `make test-action-kind` asserts after act ran a workflow through an ingress
(tests/action/ingress-workflow.sh), examples/workflows/gate-ingress.yml or gate-own-ingress.yml:
the job succeeded with verdict pass; the setup loaded the Traefik image into the kind cluster;
the artifact's report says the flows went through the Traefik the workflow asked for (the one
drainwatch deployed, its image and provider; or the one the workflow installed, by its Service and
the Ingress's Host), every request was in its access log, the rollout terminated the two pods,
and the hidden retries were counted from its counters; verdict.json and the JUnit hold the
policy's three absolute thresholds passed and the two baseline ones not judged (a new workflow
has no baseline yet); one comment says pass; no namespace of the run is left."""

import argparse
import json
import os
import re
import subprocess

from junitparser import JUnitXml

from checks import act_job, check, finish

# Per workflow: its policy's one arm.
WORKFLOWS = {
    "gate-ingress": "rollout-through-ingress",
    "gate-own-ingress": "rollout-through-traefik",
}

a = argparse.ArgumentParser()
a.add_argument("--workflow", required=True, choices=sorted(WORKFLOWS))
for flag in ("--work", "--act-exit", "--kind-log-from", "--kube", "--traefik"):
    a.add_argument(flag, required=True)
args = a.parse_args()
NAME = args.workflow
ARM = WORKFLOWS[NAME]

# --- act's job -------------------------------------------------------------------------------
log, out = act_job(NAME, args.act_exit, os.path.join(args.work, f"act-{NAME}.log"),
                   os.path.join(args.work, f"{NAME}-artifacts"), os.path.join(args.work, f"{NAME}-unzipped"))
outputs = re.findall(r"^\[[^\]]+\]\s+\|\s+verdict=(\S*) error-step=(\S*)$", log, re.M)
check(outputs == [("pass", "")], f"the step outputs say verdict=pass and no error step: {outputs}")

# --- the setup: the ingress's image loaded into the nodes -------------------------------------
kind_log = open(os.path.join(args.work, "kind", "kind.log")).read().splitlines()[int(args.kind_log_from):]
creates = [line for line in kind_log if line.startswith("kind create cluster")]
loads = [line for line in kind_log if line.startswith("kind load docker-image")]
check(len(creates) == 1, f"the setup created one kind cluster: {creates}")
check(any(f"kind load docker-image {args.traefik} " in line + " " for line in loads),
      f"the setup loaded {args.traefik} into it: {loads}")

# --- the artifact ------------------------------------------------------------------------------
if out is None:
    finish(f"test-action ({NAME} workflow)")
verdict = json.load(open(os.path.join(out, "verdict.json")))
check(verdict["verdict"] == "pass", f"verdict.json says pass ({verdict['verdict']})")
check([arm["name"] for arm in verdict["arms"]] == [ARM], f"the policy's one arm ran: {[arm['name'] for arm in verdict['arms']]}")
decisions = {t["name"]: t["verdict"] for arm in verdict["arms"] for t in arm["thresholds"]}
check(sorted(n for n, d in decisions.items() if d == "not-judged") == ["failed-dials ≤ baseline", "failed-requests ≤ baseline"]
      and sorted(d for d in decisions.values() if d != "not-judged") == ["pass"] * 3,
      f"verdict.json: the three absolute thresholds pass, the two baseline ones not judged: {decisions}")
rep = json.load(open(os.path.join(out, ARM, "report.json")))
asked = rep["trial"]["config"]["kubernetes"]["attach"].get("ingress") or {}
if NAME == "gate-ingress":
    check(asked.get("managed", {}).get("image") == args.traefik and asked["managed"].get("provider") == "kubernetes-ingress",
          f"the arm went through the Traefik drainwatch deployed, image {args.traefik}: {asked}")
else:
    check((asked.get("controller"), asked.get("namespace"), asked.get("service"), asked.get("port"), asked.get("host"), asked.get("managed"))
          == ("traefik", "traefik", "traefik", "web", "good-shutdown.drainwatch.test", None),
          f"the arm went through the Traefik the workflow installed, by its Service and the Ingress's Host: {asked}")
attach = rep["trial"]["attach"]
ingress = attach.get("ingress") or {}
terminated = sorted(p["pod"] for p in attach["pods"])
check(len(terminated) == 2, f"the rollout terminated the two pods: {terminated}")
check(ingress.get("logged", 0) > 50 and ingress.get("not_logged") == 0,
      f"every request and dial was in Traefik's access log: logged {ingress.get('logged')}, not logged {ingress.get('not_logged')}")
hidden = ingress.get("hidden_retries") or {}
check(hidden.get("counted_from") == "counters" and hidden.get("hidden") == 0,
      f"no hidden retry, counted from Traefik's counters: {hidden.get('counted_from')}, {hidden.get('hidden')}")
replicas = (ingress.get("routing") or {}).get("replicas") or []
routed = [sorted(p["pod"] for p in r.get("pods", [])) for r in replicas]
check(len(replicas) >= 1 and all(pods == terminated for pods in routed),
      f"each Traefik replica's routing to each terminated pod is measured: {routed}")

xml = JUnitXml.fromfile(os.path.join(out, "junit.xml"))
cases = [c for s in xml for c in s]
check(len(cases) == 5, f"junit has the policy's 5 thresholds: {[c.name for c in cases]}")
results = {c.name: [type(r).__name__ for r in c.result] for c in cases}
absolute = ["no-request-failed", "no-new-connection-failed", "no-ingress-hidden-retry"]
check(all(results.get(n) == [] for n in absolute), f"the three absolute thresholds passed: {results}")
skipped = [n for n, r in results.items() if r == ["Skipped"]]
check(sorted(skipped) == ["failed-dials ≤ baseline", "failed-requests ≤ baseline"],
      f"the two baseline thresholds skipped, there being no baseline: {results}")
# Each says why, as the Action's baseline step found it (the stand-in has no push run).
why = [r.message for c in cases for r in c.result if type(r).__name__ == "Skipped"]
check(len(why) == 2 and all(m.startswith("no baseline: no successful push run of workflow ") for m in why),
      f"each says the baseline step's reason: {why}")

# --- the comment --------------------------------------------------------------------------------
state = json.load(open(os.path.join(args.work, f"{NAME}-state.json")))
check(state["problems"] == [], f"the GitHub stand-in saw only valid calls: {state['problems']}")
bots = [c for c in state["comments"] if c["user"]["type"] == "Bot"]
if check(len(bots) == 1, f"one comment by the action: {len(bots)}"):
    body = bots[0]["body"]
    check(re.match(r"<!-- drainwatch:summary key=\S+ -->\n## ✅ drainwatch: pass", body) is not None, f"the comment says pass: {body[:90]!r}")
    check(ARM in body, "the comment names the arm")

# --- nothing left ---------------------------------------------------------------------------------
run_id = rep.get("environment", {}).get("run_id")
ns = json.loads(subprocess.run(["kubectl", "--kubeconfig", args.kube, "get", "ns", "-o", "json"], check=True, capture_output=True, text=True).stdout)["items"]
left = [n["metadata"]["name"] for n in ns if n["status"].get("phase") != "Terminating"
        and (n["metadata"].get("labels", {}).get("drainwatch.dev/run") == run_id or n["metadata"]["name"].startswith(f"{NAME}-"))]
check(run_id is not None and left == [], f"no namespace of the workflow or its run {run_id} left: {left}")

finish(f"test-action ({NAME} workflow)")
