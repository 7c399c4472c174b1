"""What `make test-action-kind` asserts after act ran examples/workflows/gate-ingress.yml
(tests/action/ingress-workflow.sh): the job succeeded with verdict pass; the setup loaded the
Traefik image into the kind cluster; the artifact's report says the flows went through the
Traefik drainwatch deployed (its image and provider), every request was in its access log, the
rollout terminated the two pods, and the hidden retries were counted from its counters; the JUnit
holds the policy's three absolute thresholds passed and the two baseline ones skipped (a new
workflow has no baseline yet); one comment says pass; no namespace of the run is left."""

import argparse
import glob
import json
import os
import re
import subprocess
import zipfile

from junitparser import JUnitXml

from checks import check, finish

a = argparse.ArgumentParser()
for flag in ("--work", "--act-exit", "--kind-log-from", "--kube", "--traefik"):
    a.add_argument(flag, required=True)
args = a.parse_args()
ARM = "rollout-through-ingress"

# --- act's job -------------------------------------------------------------------------------
log = open(os.path.join(args.work, "act-ingress.log"), encoding="utf-8", errors="replace").read()
check(args.act_exit == "0", f"act exits 0, got {args.act_exit}")
check(len(re.findall(r"🏁\s+Job succeeded", log)) == 1 and "❌" not in log, "the job succeeded, no step failed")
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
zips = sorted(glob.glob(os.path.join(args.work, "ingress-artifacts", "**", "*.zip"), recursive=True))
if not check(len(zips) == 1, f"one artifact on act's artifact server: {zips}"):
    finish("test-action (gate-ingress workflow)")
out = os.path.join(args.work, "ingress-unzipped")
zipfile.ZipFile(zips[0]).extractall(out)
verdict = json.load(open(os.path.join(out, "verdict.json")))
check(verdict["verdict"] == "pass", f"verdict.json says pass ({verdict['verdict']})")
check([arm["name"] for arm in verdict["arms"]] == [ARM], f"the policy's one arm ran: {[arm['name'] for arm in verdict['arms']]}")
rep = json.load(open(os.path.join(out, ARM, "report.json")))
asked = rep["trial"]["config"]["kubernetes"]["attach"].get("ingress") or {}
check(asked.get("managed", {}).get("image") == args.traefik and asked["managed"].get("provider") == "kubernetes-ingress",
      f"the arm went through the Traefik drainwatch deployed, image {args.traefik}: {asked}")
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

# --- the comment --------------------------------------------------------------------------------
state = json.load(open(os.path.join(args.work, "ingress-state.json")))
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
        and (n["metadata"].get("labels", {}).get("drainwatch.dev/run") == run_id or n["metadata"]["name"].startswith("gate-ingress-"))]
check(run_id is not None and left == [], f"no namespace of the workflow or its run {run_id} left: {left}")

finish("test-action (gate-ingress workflow)")
