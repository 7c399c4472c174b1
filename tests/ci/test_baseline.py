"""`drainwatch ci baseline` against the GitHub API stand-in (tests/ci/github-mock/server.mjs, GitHub's
shapes for workflow runs, artifacts and the zip's 302 redirect to a storage path that refuses the
token): found, given, and every way of missing a baseline (no run, no artifact, expired, 403, a zip
whose entries escape the directory, not a pull request), each a warning naming why and exit 0; then
`ci compare`, `ci summary` and `ci comment` with the baseline found."""

import json
import pathlib
import shutil
import subprocess
import zipfile

import jsonschema
import pytest

from conftest import REPO, TOKEN

ARTIFACT = "drainwatch-gate-abc123"
WORKFLOW_REF = "Codertocat/Hello-World/.github/workflows/gate.yml@refs/pull/2/merge"


def zip_dir(src: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(src.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(src).as_posix())
    return dest


@pytest.fixture()
def base_zip(tmp_path, run_fixture) -> pathlib.Path:
    """The committed local run (drain, exit-now, ignore) as the artifact GitHub would serve."""
    return zip_dir(run_fixture, tmp_path / "base.zip")


def outputs(path: pathlib.Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


def baseline(drainwatch, mock, tmp_path, event, *, baseline_input="", event_name="pull_request", **env):
    out_file = tmp_path / "github_output"
    out_file.write_text("")
    e = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_API_URL": mock.url,
        "GITHUB_REPOSITORY": "Codertocat/Hello-World",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_OUTPUT": str(out_file),
        "GITHUB_WORKFLOW_REF": WORKFLOW_REF,
        "DRAINWATCH_ARTIFACT_NAME": ARTIFACT,
        "DRAINWATCH_BASELINE": baseline_input,
    }
    e.update(env)
    e = {k: v for k, v in e.items() if v is not None}
    dest = tmp_path / "baseline"
    r = subprocess.run([str(drainwatch), "ci", "baseline", "--out", str(dest)], env=e, capture_output=True, text=True, timeout=60)
    return r, outputs(out_file), dest


def base_run(zip_path, **art):
    return {"id": 7001, "head_branch": "master", "event": "push", "conclusion": "success",
            "artifacts": [{"name": ARTIFACT, "expired": False, "zip": str(zip_path), **art}]}


def test_found_the_base_branchs_run_and_its_artifact_downloaded_without_the_token(drainwatch, github_mock, pr_event, tmp_path, base_zip):
    github_mock.reset(base_runs=[base_run(base_zip), {**base_run(base_zip), "id": 6000}])
    r, out, dest = baseline(drainwatch, github_mock, tmp_path, pr_event)
    assert r.returncode == 0, r.stderr
    assert out["baseline"] == "found", (out, r.stdout, r.stderr)
    assert out["run-id"] == "7001" and out["run-url"] == "https://github.com/Codertocat/Hello-World/actions/runs/7001"
    assert pathlib.Path(out["dir"]) == dest and (dest / "drain" / "report.json").is_file()
    s = github_mock.state()
    assert s["problems"] == []
    paths = [q["path"] for q in s["requests"]]
    assert len(paths) == 3, paths
    assert paths[0].startswith("/repos/Codertocat/Hello-World/actions/workflows/gate.yml/runs?")
    assert all(p in paths[0] for p in ("branch=master", "status=success", "event=push"))
    assert paths[1].startswith("/repos/Codertocat/Hello-World/actions/runs/7001/artifacts?name=" + ARTIFACT)
    assert paths[2] == "/repos/Codertocat/Hello-World/actions/artifacts/5000/zip"
    assert all(q["authorized"] for q in s["requests"])
    assert len(s["downloads"]) == 1 and s["downloads"][0]["authorization"] is False


def test_without_a_workflow_ref_the_workflow_is_this_runs(drainwatch, github_mock, pr_event, tmp_path, base_zip):
    github_mock.reset(base_runs=[base_run(base_zip)], current_run={"id": 99, "head_branch": "changes", "event": "pull_request"})
    r, out, _ = baseline(drainwatch, github_mock, tmp_path, pr_event, GITHUB_WORKFLOW_REF=None, GITHUB_RUN_ID="99")
    assert out["baseline"] == "found", (out, r.stdout, r.stderr)
    paths = [q["path"] for q in github_mock.state()["requests"]]
    assert paths[0] == "/repos/Codertocat/Hello-World/actions/runs/99"
    assert paths[1].startswith("/repos/Codertocat/Hello-World/actions/workflows/161335/runs?")
    assert github_mock.state()["problems"] == []


@pytest.mark.parametrize(
    "case, cfg, reason",
    [
        ("no run", {"base_runs": []}, "no successful push run of workflow gate.yml on branch master"),
        ("a failed run only", {"base_runs": "failed"}, "no successful push run of workflow gate.yml on branch master"),
        ("no artifact", {"base_runs": "other-name"}, f"the base run https://github.com/Codertocat/Hello-World/actions/runs/7001 has no artifact named {ARTIFACT}"),
        ("expired", {"base_runs": "expired"}, f"the artifact {ARTIFACT} of the base run https://github.com/Codertocat/Hello-World/actions/runs/7001 has expired"),
        ("403", {"base_runs": "ok", "actions_mode": "forbidden"}, "github answered 403"),
    ],
)
def test_every_miss_is_a_named_warning_and_not_a_failure(drainwatch, github_mock, pr_event, tmp_path, base_zip, case, cfg, reason):
    runs = {
        "failed": [{**base_run(base_zip), "conclusion": "failure"}],
        "other-name": [base_run(base_zip, name="drainwatch-other-leg")],
        "expired": [base_run(base_zip, expired=True)],
        "ok": [base_run(base_zip)],
    }
    cfg = {**cfg, "base_runs": runs.get(cfg["base_runs"], cfg["base_runs"]) if isinstance(cfg["base_runs"], str) else cfg["base_runs"]}
    github_mock.reset(**cfg)
    r, out, dest = baseline(drainwatch, github_mock, tmp_path, pr_event)
    assert r.returncode == 0, r.stderr
    assert out["baseline"] == "missing" and out["dir"] == "", out
    assert reason in out["reason"], (case, out["reason"])
    if case == "403":
        assert "permissions: actions: read" in out["reason"]
    assert r.stdout.startswith("::warning title=drainwatch baseline::no baseline: "), r.stdout
    assert not dest.exists()
    assert github_mock.state()["problems"] == []
    assert github_mock.state()["downloads"] == []


def test_a_zip_with_an_entry_escaping_the_directory_is_refused_whole(drainwatch, github_mock, pr_event, tmp_path):
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("drain/report.json", "{}")
        z.writestr("../escaped.txt", "outside")
    github_mock.reset(base_runs=[base_run(evil)])
    r, out, dest = baseline(drainwatch, github_mock, tmp_path, pr_event)
    assert r.returncode == 0, r.stderr
    assert out["baseline"] == "missing", out
    assert "escapes the directory (../escaped.txt)" in out["reason"], out["reason"]
    assert not dest.exists() and not (tmp_path / "escaped.txt").exists()
    assert len(github_mock.state()["downloads"]) == 1


def test_a_push_looks_for_nothing_and_a_directory_is_used_as_is(drainwatch, github_mock, tmp_path, run_fixture):
    push = tmp_path / "push.json"
    shutil.copy(REPO / "tests/fixtures/ci/github/push.json", push)
    github_mock.reset()
    r, out, _ = baseline(drainwatch, github_mock, tmp_path, push, event_name="push")
    assert (out["baseline"], r.returncode) == ("missing", 0), out
    assert out["reason"].startswith("not a pull request"), out
    assert "::warning" not in r.stdout, "a push publishes the baseline: nothing is missing"
    r, out, _ = baseline(drainwatch, github_mock, tmp_path, push, event_name="push", baseline_input=str(run_fixture))
    assert (out["baseline"], out["dir"]) == ("given", str(run_fixture)), out
    r, out, _ = baseline(drainwatch, github_mock, tmp_path, push, event_name="push", baseline_input="./nowhere")
    assert out["baseline"] == "missing" and "neither a directory nor an artifact name" in out["reason"], out
    assert github_mock.state()["requests"] == []


def test_an_artifact_name_input_is_looked_up_on_the_default_branch_outside_a_pull_request(drainwatch, github_mock, tmp_path, base_zip):
    push = tmp_path / "push.json"
    shutil.copy(REPO / "tests/fixtures/ci/github/push.json", push)
    branch = json.loads(push.read_text())["repository"]["default_branch"]
    github_mock.reset(base_runs=[{**base_run(base_zip, name="nightly"), "head_branch": branch}])
    r, out, _ = baseline(drainwatch, github_mock, tmp_path, push, event_name="push", baseline_input="nightly")
    assert out["baseline"] == "found", (out, r.stdout, r.stderr)
    assert f"branch={branch}" in github_mock.state()["requests"][0]["path"]


def ci(drainwatch, step, run_dir, tmp_path, **env):
    e = {"PATH": "/usr/bin:/bin", "DRAINWATCH_REPORT_DIR": str(run_dir), **env}
    return subprocess.run([str(drainwatch), "ci", step], env=e, capture_output=True, text=True, timeout=60)


def test_compare_and_summary_show_base_against_this_run_with_the_link(drainwatch, github_mock, pr_event, tmp_path, base_zip, run_fixture):
    github_mock.reset(base_runs=[base_run(base_zip)])
    _, out, dest = baseline(drainwatch, github_mock, tmp_path, pr_event)
    assert out["baseline"] == "found"
    judged = subprocess.run([str(drainwatch), "ci", "evaluate", "--policy", str(REPO / "tests/fixtures/ci/policies/local-fail.toml"), "--dir", str(run_fixture)], capture_output=True, text=True)
    assert (run_fixture / "verdict.json").is_file(), judged.stderr
    env = {"DRAINWATCH_BASELINE_DIR": out["dir"], "DRAINWATCH_BASELINE_RUN_URL": out["run-url"], "DRAINWATCH_BASELINE_RUN_ID": out["run-id"]}
    r = ci(drainwatch, "compare", run_fixture, tmp_path, **env)
    assert r.returncode == 0, r.stderr
    report = json.loads((run_fixture / "compare.json").read_text())
    schema = json.loads((REPO / "schema/compare.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert report["base_run"] == {"id": 7001, "url": out["run-url"]} and report["compared"] == 2
    md = (run_fixture / "compare.md").read_text()
    # One trial a side: nothing regressed, and the rank-sum test could decide none of the metrics.
    assert md.startswith("### Compared with the baseline: ⚠️ no regression found, 10 of 10 metrics undecided\n"), md
    r = ci(drainwatch, "summary", run_fixture, tmp_path, **env)
    assert r.returncode == 0, r.stderr
    assert "### Compared with the baseline: ⚠️ no regression found, 10 of 10 metrics undecided\n" in r.stdout
    assert f"[run 7001]({out['run-url']})" in r.stdout
    assert r.stdout.count("| `tcp-severed` |") == 2, r.stdout
    assert "**ignore**: only in the baseline" in r.stdout
    r = ci(drainwatch, "summary", run_fixture, tmp_path, DRAINWATCH_BASELINE_REASON="no successful push run of workflow gate.yml on branch master")
    assert "### Compared with the baseline: no baseline: no successful push run of workflow gate.yml on branch master\n" in r.stdout
