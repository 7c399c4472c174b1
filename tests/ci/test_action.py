"""What act cannot show cheaply about action.yml and setup/action.yml, checked without a runner.
The actions themselves run under nektos/act in `make test-action` (tests/action/run.sh), which
retired the step-by-step evaluator that lived here (tests/ci/action_runner.py).

- every input reaches a shell only through `env:`, and remote actions are pinned by commit;
- setup/kind.sh's kind configuration (the kind path cannot run here: no Docker engine) and its
  named refusals;
- setup/cluster.sh's named errors: a kubeconfig that does not answer, `cluster: existing`
  without one (naming the fork on a fork's pull request), `~/` expansion."""

import json
import pathlib
import re
import subprocess

import pytest
import yaml

from conftest import REPO

ACTIONS = [REPO / "action.yml", REPO / "setup/action.yml"]


@pytest.mark.parametrize("path", ACTIONS, ids=lambda p: str(p.relative_to(REPO)))
def test_inputs_reach_the_shell_only_through_env(path):
    action = yaml.safe_load(path.read_text())
    steps = action["runs"]["steps"]
    assert len(steps) >= 2
    for step in steps:
        if "run" in step:
            assert "${{" not in step["run"], f"step {step.get('name')!r} interpolates into shell"
        if "uses" in step and not step["uses"].startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), f"{step['uses']} is not pinned"


def test_action_inputs_and_outputs():
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert set(action["outputs"]) == {
        "verdict", "error-step", "report-dir", "junit", "key", "artifact-id", "artifact-url", "comment-url",
        "baseline", "baseline-reason", "baseline-run-url",
    }
    assert inputs_default(action, "baseline") == "auto"
    names = [s.get("id") for s in action["runs"]["steps"]]
    # The baseline is fetched before the run and compared before the upload, so compare.json is
    # in the artifact.
    assert names.index("key") < names.index("baseline") < names.index("run") < names.index("compare") < names.index("upload")
    inputs = action["inputs"]
    assert inputs["matrix"]["default"] == "${{ toJSON(matrix) }}"
    assert inputs["cluster"]["default"] == "auto"
    assert inputs["image"]["default"] == "", "the image defaults to the release's exact tag, computed from Cargo.toml"
    assert inputs["binary-source"]["default"] == "release"


def inputs_default(action, name):
    return action["inputs"][name]["default"]


def kind_sh(*args, **env):
    return subprocess.run([str(REPO / "setup/kind.sh"), *args], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env})


def test_kind_config_has_the_workers_and_the_proxy_mode():
    r = kind_sh("config", DRAINWATCH_KIND_WORKERS="2", DRAINWATCH_KUBE_PROXY_MODE="nftables")
    assert r.returncode == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [n["role"] for n in cfg["nodes"]] == ["control-plane", "worker", "worker"]
    assert cfg["networking"] == {"kubeProxyMode": "nftables"}
    default = yaml.safe_load(kind_sh("config").stdout)
    assert [n["role"] for n in default["nodes"]] == ["control-plane", "worker"]
    assert default["networking"] == {"kubeProxyMode": "iptables"}


@pytest.mark.parametrize(
    "env, says",
    [
        ({"DRAINWATCH_KIND_WORKERS": "0"}, "workers must be at least 1: drain-node needs"),
        ({"DRAINWATCH_KIND_WORKERS": "two"}, "workers must be a number"),
        ({"DRAINWATCH_KUBE_PROXY_MODE": "userspace"}, "kube-proxy-mode must be iptables, nftables or ipvs"),
    ],
)
def test_kind_config_refuses_by_name(env, says):
    r = kind_sh("config", **env)
    assert r.returncode == 2 and says in r.stderr, r.stderr


def test_kind_create_applies_the_managed_ingress_role(tmp_path):
    """The cluster kind.sh creates gets deploy/rbac-attach.yaml's ClusterRole for the Traefik a
    trial deploys (`ingress-managed`): kind and kubectl stand-ins record what they were asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kind").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/kind.args\n")
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/kubectl.args\ncat > {tmp_path}/kubectl.stdin\n")
    for f in ("kind", "kubectl"):
        (bin_dir / f).chmod(0o755)
    kc = tmp_path / "kind" / "kubeconfig"
    r = subprocess.run([str(REPO / "setup/kind.sh"), "create"], capture_output=True, text=True,
                       env={"PATH": f"{bin_dir}:/usr/bin:/bin", "DRAINWATCH_KIND_KUBECONFIG": str(kc)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "kind.args").read_text().startswith("create cluster --name drainwatch ")
    assert (tmp_path / "kubectl.args").read_text().split() == ["--kubeconfig", str(kc), "apply", "-f", "-"]
    applied = [d for d in yaml.safe_load_all((tmp_path / "kubectl.stdin").read_text()) if d]
    shipped = [d for d in yaml.safe_load_all((REPO / "deploy/rbac-attach.yaml").read_text())
               if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == "drainwatch-ingress-traefik"]
    assert len(shipped) == 1 and applied == shipped, applied


def cluster_sh(tmp_path, **env):
    out = tmp_path / "output"
    out.write_text("")
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(out)}
    r = subprocess.run([str(REPO / "setup/cluster.sh")], capture_output=True, text=True, env={**base, **env})
    return r, dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)


def dead_kubeconfig(path):
    # 127.0.0.1:9 (discard): nothing answers there.
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))
    return path


def test_no_kubeconfig_anywhere_creates_kind(tmp_path):
    r, out = cluster_sh(tmp_path, INPUT_CLUSTER="auto")
    assert r.returncode == 0, r.stderr
    assert out["create"] == "true"


@pytest.mark.skipif(subprocess.run(["which", "kubectl"], capture_output=True).returncode != 0, reason="needs kubectl")
def test_a_kubeconfig_that_does_not_answer_is_a_named_error_not_a_new_cluster(tmp_path):
    (tmp_path / ".kube").mkdir()
    dead_kubeconfig(tmp_path / ".kube/config")
    r, out = cluster_sh(tmp_path, INPUT_CLUSTER="auto", INPUT_KUBECONFIG="~/.kube/config")
    assert r.returncode == 2
    assert f"the cluster of the kubeconfig input ({tmp_path}/.kube/config) does not answer" in r.stderr
    assert "not creating another cluster in its place" in r.stderr
    assert "create" not in out
    # The job's own ~/.kube/config is found, and refused the same way.
    r, out = cluster_sh(tmp_path, INPUT_CLUSTER="auto")
    assert r.returncode == 2 and "the cluster of the job's ~/.kube/config does not answer" in r.stderr


def test_existing_without_a_kubeconfig_on_a_fork_pr_names_the_fork(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"repo": {"full_name": "a-fork/Hello-World"}},
                                                  "base": {"repo": {"full_name": "Codertocat/Hello-World"}}}}))
    r, out = cluster_sh(tmp_path, INPUT_CLUSTER="existing", INPUT_KUBECONFIG="",
                        GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event))
    assert r.returncode == 2 and "create" not in out
    assert "comes from the fork a-fork/Hello-World, and GitHub passes no secrets to those" in r.stderr
    r, _ = cluster_sh(tmp_path, INPUT_CLUSTER="existing")
    assert r.returncode == 2 and "is the secret set?" in r.stderr


def test_kind_beside_a_kubeconfig_and_a_missing_path_are_named_errors(tmp_path):
    r, _ = cluster_sh(tmp_path, INPUT_CLUSTER="kind", INPUT_KUBECONFIG="apiVersion: v1\n")
    assert r.returncode == 2 and "cluster: kind creates a new cluster, but a kubeconfig was given too" in r.stderr
    r, _ = cluster_sh(tmp_path, INPUT_CLUSTER="auto", INPUT_KUBECONFIG="~/nope/config")
    assert r.returncode == 2 and f"the kubeconfig input names {tmp_path}/nope/config, which is not a file" in r.stderr
