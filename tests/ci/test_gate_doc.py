"""docs/ci.md embeds examples/workflows/gate.yml verbatim, and both it and README.md's workflow are
complete: a push trigger on the default branch that publishes the baseline, pull_request, the
permissions the baseline and the comment need, and concurrency. (`make test-action` and
`make test-action-kind` run gate.yml under act; `make test-action-kind` runs README's as copied.)"""

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


@pytest.mark.parametrize("name", ["examples/workflows/gate.yml", "README.md"])
def test_the_workflow_is_complete(name):
    text = readme_workflow() if name == "README.md" else (REPO / name).read_text()
    wf = yaml.safe_load(text)
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in on and on["push"]["branches"] == ["main"], on
    assert wf["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    assert wf["concurrency"] == {"group": "drainwatch-${{ github.ref }}", "cancel-in-progress": True}
