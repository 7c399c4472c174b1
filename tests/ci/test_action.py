"""action.yml run step by step in a GitHub-like environment: $GITHUB_STEP_SUMMARY,
$GITHUB_OUTPUT, $GITHUB_EVENT_PATH of GitHub's recorded pull_request payload, $GITHUB_API_URL at
the local GitHub stand-in. Stand-ins only for docker, kind and the artifact upload.

Most policies run on `platform: local` (no cluster); the kubernetes path is checked for its
wiring (kind, image load) and its honest failure without a cluster, and, with
DRAINWATCH_E2E_KUBECONFIG set (make e2e-action), run for real against that cluster."""

import json
import os
import pathlib
import re
import shutil

import pytest
import yaml
from junitparser import JUnitXml

from action_runner import run_action, stand_in_bin
from conftest import REPO, TOKEN, free_ports
from test_summary_render import render, status_of

MARKER = "<!-- drainwatch:summary key=e2e -->"


class Runner:
    def __init__(self, tmp_path, drainwatch, github_mock, pr_event):
        self.tmp = tmp_path
        self.mock = github_mock
        self.log = tmp_path / "stand-ins.log"
        self.log.write_text("")
        self.bin = stand_in_bin(tmp_path / "stand-in-bin", drainwatch, self.log)
        self.uploads = []
        self.kind_calls = []
        self.summary = tmp_path / "step-summary.md"
        self.event = pr_event
        self.n = 0

    def upload(self, with_values, env):
        src = pathlib.Path(with_values["path"])
        if not src.exists():
            # upload-artifact with if-no-files-found: warn uploads nothing and sets no outputs.
            assert with_values["if-no-files-found"] == "warn"
            self.uploads.append((with_values["name"], None))
            return {}
        dst = self.tmp / f"artifact-{len(self.uploads) + 1}"
        shutil.copytree(src, dst)
        self.uploads.append((with_values["name"], dst))
        n = len(self.uploads)
        return {
            "artifact-id": str(1000 + n),
            "artifact-url": f"https://github.com/Codertocat/Hello-World/actions/runs/42/artifacts/{1000 + n}",
            "artifact-digest": "0" * 64,
        }

    def kind(self, with_values, env):
        self.kind_calls.append(with_values)
        return {}

    def run(self, job_env=None, **inputs):
        self.n += 1
        runner_temp = self.tmp / f"runner-temp-{self.n}"
        work = self.tmp / f"work-{self.n}"
        ws = self.tmp / "workspace"
        for d in (runner_temp, work, ws):
            d.mkdir(exist_ok=True)
        tcp, udp, ready = free_ports()
        env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.tmp),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "RUNNER_TEMP": str(runner_temp),
            "GITHUB_WORKSPACE": str(ws),
            "GITHUB_ACTION_PATH": str(REPO),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_REPOSITORY": "Codertocat/Hello-World",
            "GITHUB_API_URL": self.mock.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": "42",
            "GITHUB_JOB": "e2e",
            # A job-level env for the local platform: free ports, so a probe someone else runs
            # on this machine cannot collide.
            "DRAINWATCH_TCP_PORT": str(tcp),
            "DRAINWATCH_UDP_PORT": str(udp),
            "DRAINWATCH_READY_PORT": str(ready),
        }
        env.update(job_env or {})
        self.summary.write_text("")
        return run_action(
            REPO / "action.yml",
            inputs,
            env,
            {"helm/kind-action": self.kind, "actions/upload-artifact": self.upload},
            work,
            github={"token": TOKEN, "event_name": "pull_request"},
        )


@pytest.fixture()
def runner(tmp_path, drainwatch, github_mock, pr_event):
    github_mock.reset(seed=120)
    return Runner(tmp_path, drainwatch, github_mock, pr_event)


def crate_version():
    m = re.search(r'^version = "([^"]+)"', (REPO / "Cargo.toml").read_text(), re.M)
    return m.group(1)


def policy(name):
    return str(REPO / "tests/fixtures/ci/policies" / name)


def test_inputs_reach_the_shell_only_through_env():
    action = yaml.safe_load((REPO / "action.yml").read_text())
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], f"step {step.get('name')!r} interpolates into shell"
        if "uses" in step and not step["uses"].startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), f"{step['uses']} is not pinned"
    assert set(action["outputs"]) == {"verdict", "report-dir", "junit"}
    assert {"policy", "kubeconfig", "image", "arms", "repeat", "comment", "github-token", "artifact-name"} <= set(action["inputs"])


def test_passing_policy_creates_then_updates_one_comment(runner, github_mock):
    run = runner.run(platform="local", policy=policy("local-pass.toml"))
    assert run.exit_code == 0, [(r.name, r.returncode, r.stderr[-2000:]) for r in run.failed]
    assert run.outputs["verdict"] == "pass"
    report_dir = pathlib.Path(run.outputs["report-dir"])
    assert (report_dir / "drain" / "report.json").is_file()
    assert run.outputs["junit"] == str(report_dir / "junit.xml")
    # No cluster was made or loaded for the local platform; the binary came out of the image.
    assert runner.kind_calls == []
    assert runner.log.read_text().splitlines() == [
        "docker create ghcr.io/drainwatch/drainwatch:v0",
        "docker cp 0123456789ab:/drainwatch " + str(runner.tmp / "runner-temp-1/drainwatch/bin/drainwatch"),
        "docker rm 0123456789ab",
    ]
    # The artifact holds the reports and the gate's files.
    [(name, artifact)] = runner.uploads
    assert name == "drainwatch-report"
    assert {p.name for p in artifact.iterdir()} >= {"drain", "junit.xml", "summary.md", "verdict.json"}
    # The job summary, with the artifact's link.
    summary = runner.summary.read_text()
    assert summary.startswith("## ✅ drainwatch: pass — 3 thresholds held in 1 arm")
    assert "(https://github.com/Codertocat/Hello-World/actions/runs/42/artifacts/1001)" in summary
    assert "[workflow run](https://github.com/Codertocat/Hello-World/actions/runs/42)" in summary
    # One comment created, after paging through the 120 that were there.
    s = github_mock.state()
    assert s["problems"] == []
    assert len(s["comments"]) == 121
    first = s["comments"][-1]
    assert first["body"].startswith(MARKER + "\n## ✅ drainwatch: pass")
    assert [r["method"] for r in s["requests"]] == ["GET", "GET", "POST"]

    # The second run updates that comment; nothing is duplicated.
    run = runner.run(platform="local", policy=policy("local-pass.toml"))
    assert run.exit_code == 0, [(r.name, r.returncode, r.stderr[-3000:]) for r in run.results]
    s = github_mock.state()
    assert s["problems"] == []
    assert len(s["comments"]) == 121
    assert [r["method"] for r in s["requests"]][-3:] == ["GET", "GET", "PATCH"]
    assert sum(MARKER in c["body"] for c in s["comments"]) == 1
    assert s["comments"][-1]["id"] == first["id"]
    assert "artifacts/1002" in s["comments"][-1]["body"]


def test_failing_policy_exits_1_with_junit_naming_arm_threshold_and_value(runner, github_mock):
    run = runner.run(platform="local", policy=policy("local-fail.toml"), **{"artifact-name": "gate"})
    assert run.exit_code == 1
    assert [r.name for r in run.failed] == ["Exit with the verdict"]
    assert "::error title=drainwatch::a threshold was missed" in run.step("Exit with the verdict").stdout
    assert run.outputs["verdict"] == "fail"
    xml = JUnitXml.fromfile(run.outputs["junit"])
    exit_now = next(s for s in xml if s.name == "exit-now")
    assert (exit_now.tests, exit_now.failures) == (3, 2)
    failure = next(c for c in exit_now if c.name == "tcp drained-clean-close ≥ 100%").result[0]
    assert failure.message == (
        "exit-now: trial-001: 0 of 3 tcp flows drained-clean-close (0%); the threshold is ≥ 100%"
    )
    assert runner.uploads[0][0] == "gate"
    summary = runner.summary.read_text()
    assert summary.startswith("## ❌ drainwatch: fail")
    assert "- **exit-now** · `tcp severed ≤ 0` — trial-001: 3 of 3 tcp flows severed (100%)" in summary
    s = github_mock.state()
    assert s["problems"] == []
    assert s["comments"][-1]["body"].startswith(MARKER + "\n## ❌ drainwatch: fail")


def test_fork_like_403_degrades_to_a_warning(runner, github_mock, pr_event):
    event = json.loads(pr_event.read_text())
    event["pull_request"]["head"]["repo"]["full_name"] = "a-fork/Hello-World"
    pr_event.write_text(json.dumps(event))
    github_mock.reset(seed=3, mode="forbidden")
    run = runner.run(platform="local", policy=policy("local-pass.toml"))
    assert run.exit_code == 0, "the verdict decides the job, not the comment"
    comment = run.step("Pull request comment")
    assert comment.outcome == "success"
    warnings = [line for line in comment.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1
    assert "403" in warnings[0] and "forks get a read-only token" in warnings[0]
    assert runner.summary.read_text().startswith("## ✅ drainwatch: pass"), "the job summary is kept"
    s = github_mock.state()
    assert s["problems"] == []
    assert len(s["comments"]) == 3
    assert TOKEN not in "".join(r.stdout + r.stderr for r in run.results)


def test_arms_and_repeat_inputs_reach_the_run(runner):
    run = runner.run(platform="local", policy=policy("local-fail.toml"), arms="drain", repeat="2", comment="false")
    assert run.exit_code == 0
    verdict = json.loads((pathlib.Path(run.outputs["report-dir"]) / "verdict.json").read_text())
    assert [a["name"] for a in verdict["arms"]] == ["drain"]
    assert [t["id"] for t in verdict["arms"][0]["trials"]] == ["trial-001", "trial-002"]
    assert "pr comment: disabled" in run.step("Pull request comment").stderr


def test_a_refused_policy_is_a_tool_failure_with_a_summary(runner, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n[[arm]]\nname = "a"\nthresholds = []\n')
    run = runner.run(platform="local", policy=str(bad))
    assert run.exit_code == 2
    assert run.outputs["verdict"] == "error"
    assert run.outputs["junit"] == ""
    assert 'arm "a" has no thresholds' in run.step("Run the policy").stderr
    assert runner.summary.read_text().startswith("## ⚠️ drainwatch: no verdict")
    assert "exited with code 2" in runner.summary.read_text()
    assert runner.uploads == [("drainwatch-report", None)], "nothing to upload, and that is not an error"


def test_kubernetes_mode_makes_a_kind_cluster_and_loads_the_image(runner):
    run = runner.run(image="drainwatch:ci-test", **{"kind-node-image": "kindest/node:v1.35.0"})
    assert runner.kind_calls == [{"cluster_name": "drainwatch", "node_image": "kindest/node:v1.35.0", "wait": "120s"}]
    assert "kind load docker-image drainwatch:ci-test --name drainwatch" in runner.log.read_text()
    # The stand-in made no cluster, so the run is a tool failure, reported as such.
    assert "Run the policy" in run.ran()
    assert run.outputs["verdict"] == "error"
    assert run.exit_code == 2
    assert runner.summary.read_text().startswith("## ⚠️ drainwatch: no verdict")


def test_a_given_kubeconfig_skips_kind_and_reaches_the_run(runner, tmp_path):
    content = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
    run = runner.run(kubeconfig=content, comment="false")
    assert runner.kind_calls == []
    assert "kind " not in runner.log.read_text()
    assert run.step("Use the given kubeconfig").outcome == "success"
    path = runner.tmp / "runner-temp-1/drainwatch/kubeconfig"
    assert path.read_text() == content
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert "Run the policy" in run.ran()


# --- on a real cluster ----------------------------------------------------------------------

@pytest.fixture()
def cluster_kubeconfig():
    kc = os.environ.get("DRAINWATCH_E2E_KUBECONFIG")
    if not kc:
        pytest.skip("needs a cluster: set DRAINWATCH_E2E_KUBECONFIG (make e2e-action uses the local cluster's)")
    assert pathlib.Path(kc).is_file(), f"DRAINWATCH_E2E_KUBECONFIG={kc} does not exist"
    return kc


def test_on_the_cluster_pass_then_fail_with_one_comment(runner, github_mock, cluster_kubeconfig, node_modules, tmp_path, test_output):
    image = os.environ.get("DRAINWATCH_E2E_IMAGE", f"ghcr.io/drainwatch/drainwatch:v{crate_version()}")
    # Where the flow client runs (a job-level env, as a workflow would set it): the client pod
    # needs an image as new as the binary; `host` needs none.
    job_env = {"DRAINWATCH_CLIENT": os.environ.get("DRAINWATCH_E2E_CLIENT", "pod")}
    run = runner.run(job_env, kubeconfig=cluster_kubeconfig, image=image, policy=policy("cluster-pass.toml"))
    assert run.exit_code == 0, run.step("Run the policy").stderr[-4000:]
    assert run.outputs["verdict"] == "pass"
    assert runner.kind_calls == []
    report = json.loads((pathlib.Path(run.outputs["report-dir"]) / "drain" / "report.json").read_text())
    assert report["environment"]["platform"] == "kubernetes"
    events = {e["event"] for e in report["trial"]["timeline"]}
    assert {"endpointslice_ready_false", "container_terminated", "sigterm_received"} <= events
    summary = runner.summary.read_text()
    assert summary.startswith("## ✅ drainwatch: pass — 2 thresholds held in 1 arm")
    assert "endpoint not ready at" in summary and "platform kubernetes" in summary
    # The real cluster's timeline renders as GitHub would draw it.
    dom = render(tmp_path, node_modules, summary, screenshot=test_output / "summary-cluster.png")
    assert status_of(dom) == "blocks 1 rendered 1 errors 0", status_of(dom)
    (test_output / "summary-cluster.md").write_text(summary)
    s = github_mock.state()
    assert s["problems"] == [] and len(s["comments"]) == 121

    run = runner.run(job_env, kubeconfig=cluster_kubeconfig, image=image, policy=policy("cluster-fail.toml"))
    assert run.exit_code == 1, run.step("Run the policy").stderr[-4000:]
    xml = JUnitXml.fromfile(run.outputs["junit"])
    [suite] = list(xml)
    [case] = list(suite)
    assert suite.name == "exit-now" and case.name == "tcp drained-clean-close ≥ 100%"
    assert case.result[0].message.startswith("exit-now: trial-001: 0 of 3 tcp flows drained-clean-close (0%)")
    s = github_mock.state()
    assert s["problems"] == [] and len(s["comments"]) == 121, "the same comment, updated"
    assert s["comments"][-1]["body"].startswith(MARKER + "\n## ❌ drainwatch: fail")
