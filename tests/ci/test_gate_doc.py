"""docs/ci.md embeds examples/workflows/gate.yml verbatim, and the workflow has what the baseline
needs: `permissions: actions: read` and a push trigger on the default branch that publishes it."""

import re

import yaml

from conftest import REPO


def test_the_documented_workflow_is_the_example_verbatim():
    doc = (REPO / "docs/ci.md").read_text()
    gate = (REPO / "examples/workflows/gate.yml").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```\n", doc, re.S)
    assert gate in blocks, "docs/ci.md's workflow differs from examples/workflows/gate.yml"


def test_the_example_can_read_and_publish_its_baseline():
    wf = yaml.safe_load((REPO / "examples/workflows/gate.yml").read_text())
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in on and on["push"]["branches"] == ["main"], on
    assert wf["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
