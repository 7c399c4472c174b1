"""docs/ci.md embeds examples/workflows/gate.yml verbatim, and it, gate-ingress.yml,
gate-own-ingress.yml and README.md's workflow are complete: a push trigger on the default branch that publishes the baseline,
pull_request, the permissions the baseline and the comment need, and concurrency, in a group of
each workflow's own (one shared group would cancel the other workflow's run of the same ref).
(`make test-action` and `make test-action-kind` run gate.yml under act; `make test-action-kind`
also runs gate-ingress.yml, gate-own-ingress.yml and README's as copied.)"""

import re
import sys

import pytest
import yaml

from conftest import REPO


def test_the_documented_workflow_is_the_example_verbatim():
    doc = (REPO / "docs/ci.md").read_text()
    gate = (REPO / "examples/workflows/gate.yml").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```\n", doc, re.S)
    assert gate in blocks, "docs/ci.md's workflow differs from examples/workflows/gate.yml"


def readme_workflow():
    sys.path.insert(0, str(REPO / "tests/action"))
    from user_repo import readme_gate  # the extraction `make test-action-kind` runs the workflow from

    return readme_gate(REPO)[0]


GROUPS = {
    "examples/workflows/gate.yml": "drainwatch-${{ github.ref }}",
    "examples/workflows/gate-ingress.yml": "drainwatch-ingress-${{ github.ref }}",
    "examples/workflows/gate-own-ingress.yml": "drainwatch-own-ingress-${{ github.ref }}",
    "README.md": "drainwatch-${{ github.ref }}",
}


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_the_workflow_is_complete(name):
    text = readme_workflow() if name == "README.md" else (REPO / name).read_text()
    wf = yaml.safe_load(text)
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in on and on["push"]["branches"] == ["main"], on
    assert wf["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    assert wf["concurrency"] == {"group": GROUPS[name], "cancel-in-progress": True}


def test_the_example_workflows_do_not_share_a_concurrency_group():
    shipped = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "examples/workflows").glob("*.yml"))
    assert shipped == sorted(n for n in GROUPS if n != "README.md"), shipped
    groups = [yaml.safe_load((REPO / n).read_text())["concurrency"]["group"] for n in shipped]
    assert len(set(groups)) == len(groups), groups


def test_the_ingress_workflow_loads_the_image_a_managed_arm_deploys():
    """gate-ingress.yml loads the managed Traefik's image into the nodes: the one drainwatch
    deploys when the policy names none (`DEFAULT_TRAEFIK_IMAGE`), or every node would pull it."""
    rust = (REPO / "crates/evidence/src/plan/attach/ingress.rs").read_text()
    default = re.search(r'pub const DEFAULT_TRAEFIK_IMAGE: &str = "([^"]+)";', rust)[1]
    wf = yaml.safe_load((REPO / "examples/workflows/gate-ingress.yml").read_text())
    assert wf["jobs"]["gate-ingress"]["env"]["INGRESS_IMAGE"] == default
    policy = (REPO / "examples/gate/through-ingress.toml").read_text()
    assert "ingress-managed = true" in policy and "ingress-image" not in policy
    assert f"`images: ...\n  {default}`" in (REPO / "docs/ingress.md").read_text()


def test_the_own_ingress_workflow_installs_the_controller_its_policy_names():
    """gate-own-ingress.yml loads the image examples/k8s/traefik.yaml runs (its sed keeps the
    two one), installs it, and applies the Ingress whose Host the policy's arm sends; the policy
    names that Traefik's Service and port."""
    wf = yaml.safe_load((REPO / "examples/workflows/gate-own-ingress.yml").read_text())
    image = wf["jobs"]["gate-own-ingress"]["env"]["INGRESS_IMAGE"]
    docs = list(yaml.safe_load_all((REPO / "examples/k8s/traefik.yaml").read_text()))
    deployment = [d for d in docs if d["kind"] == "Deployment"]
    assert len(deployment) == 1
    containers = deployment[0]["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["traefik"]  # the container drainwatch reads
    assert containers[0]["image"] == image
    ports = {p["name"] for p in containers[0]["ports"]}
    assert {"web", "metrics", "traefik"} <= ports, ports
    assert "--accesslog.fields.headers.names.X-Drainwatch-Request=keep" in containers[0]["args"]
    service = [d for d in docs if d["kind"] == "Service"]
    assert len(service) == 1 and service[0]["metadata"] == {"name": "traefik", "namespace": "traefik"}
    assert [p["name"] for p in service[0]["spec"]["ports"]] == ["web"]
    ingress = yaml.safe_load((REPO / "examples/k8s/good-shutdown-ingress.yaml").read_text())
    host = ingress["spec"]["rules"][0]["host"]
    policy = (REPO / "examples/gate/through-own-ingress.toml").read_text()
    assert 'ingress-service = "traefik/traefik:web"' in policy
    assert f'ingress-host = "{host}"' in policy
    assert "ingress-managed" not in policy
    steps = "\n".join(s.get("run", "") for s in wf["jobs"]["gate-own-ingress"]["steps"])
    assert "examples/k8s/traefik.yaml" in steps and '"examples/k8s/$SERVICE-ingress.yaml"' in steps
