"""docs/other-ci.md's GitLab, Jenkins and Buildkite snippets: their YAML parses, what each CI reads
is where drainwatch writes, and their shell runs (other_ci.py emulates each CI's shell) with a
stand-in binary served as the release from a loopback HTTP server: drainwatch's exit code comes
out of the job unchanged, and a binary that does not match its checksum never runs (exit 2). The
Jenkinsfile also runs whole, in Groovy, with stand-in steps (jenkins_stub.groovy).

No cluster: the stand-in records how it was started instead of running a trial. The real binary
against the local cluster: tests/ci/docker-run-cluster.sh (make docker-run-cluster)."""

import hashlib
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest
import yaml

import other_ci

VERSION = "v" + other_ci.crate_version()
KUBECONFIG_TEXT = "apiVersion: v1\nkind: Config\n# the job's kubeconfig\n"

# The stand-in binary: records its arguments and the kubeconfig it was given, writes the JUnit
# file under --out as drainwatch does, and exits with STUB_EXIT.
STUB = """#!/bin/sh
printf '%s\\n' "$@" > "$STUB_RECORD"
cat "$KUBECONFIG" > "$STUB_RECORD.kubeconfig"
out=
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$out" && echo '<testsuites/>' > "$out/junit.xml"
exit "${STUB_EXIT:-0}"
"""


@pytest.fixture
def job_dir(tmp_path):
    """A project checkout as the job sees it, a kubeconfig file, the release served locally."""
    assert shutil.which("busybox"), "Debian's busybox runs the GitLab job: .ci/setup-test-tools.sh installs it"
    work = tmp_path / "project"
    work.mkdir()
    (work / "drainwatch.toml").write_text("version = 1\n")
    stub = tmp_path / "stub"
    stub.write_text(STUB)
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    releases = tmp_path / "releases"
    asset = other_ci.publish(releases, VERSION, stub)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG_TEXT)
    record = tmp_path / "record"
    with other_ci.release_server(releases) as url:
        yield {"work": work, "asset": asset, "url": url, "record": record, "releases": releases,
               "kubeconfig": kubeconfig, "env": {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                                                 "STUB_RECORD": str(record)}}


def started_with(job_dir) -> list[str]:
    return job_dir["record"].read_text().splitlines()


# --- GitLab -------------------------------------------------------------------------------------


def gitlab(job_dir, code=0, **overrides):
    vars_ = {"DRAINWATCH_RELEASES": job_dir["url"], "KUBECONFIG": str(job_dir["kubeconfig"]),
             **overrides}
    env = {**job_dir["env"], "STUB_EXIT": str(code)}
    return other_ci.run_gitlab(other_ci.gitlab_job(), job_dir["work"], env, vars_)


def test_gitlab_yaml_reads_the_report_drainwatch_writes():
    job = other_ci.gitlab_job()
    assert job["variables"]["DRAINWATCH_VERSION"] == VERSION, "the doc pins another version than Cargo.toml's"
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["paths"] == ["report/"]
    assert job["artifacts"]["reports"]["junit"] == "report/junit.xml"
    assert job["retry"]["exit_codes"] == [2]
    run = job["script"][-1].split()
    assert run[run.index("--out") + 1] == "report"


@pytest.mark.parametrize("code", [0, 1, 2, 130])
def test_gitlab_job_exits_with_drainwatchs_code(job_dir, code):
    out = gitlab(job_dir, code)
    assert out.returncode == code, out.stderr
    args = started_with(job_dir)
    assert args[:2] == ["run", "--platform"]
    # one version: the probe image is the release the binary came from
    assert args[args.index("--image") + 1] == f"ghcr.io/drainwatch/drainwatch:{VERSION}"
    assert (job_dir["record"].parent / "record.kubeconfig").read_text() == KUBECONFIG_TEXT
    assert (job_dir["work"] / "report" / "junit.xml").is_file(), "artifacts:reports:junit would find nothing"


def test_gitlab_refuses_a_binary_changed_after_its_checksum(job_dir):
    with open(job_dir["asset"], "ab") as f:
        f.write(b"\n# tampered\n")
    out = gitlab(job_dir)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "does not match its SHA-256" in out.stderr
    assert not job_dir["record"].exists(), "the tampered binary ran"


def test_gitlab_pinned_digest_wins_over_the_served_checksum(job_dir):
    good = hashlib.sha256(job_dir["asset"].read_bytes()).hexdigest()
    assert gitlab(job_dir, DRAINWATCH_SHA256=good).returncode == 0
    job_dir["record"].unlink()
    out = gitlab(job_dir, DRAINWATCH_SHA256="0" * 64)
    assert out.returncode == 2, out.stderr
    assert not job_dir["record"].exists(), "a binary that does not match the pinned digest ran"


def test_gitlab_runs_on_merge_requests_and_the_default_branch():
    rules = other_ci.gitlab_job()["rules"]
    assert [r["if"] for r in rules] == ['$CI_PIPELINE_SOURCE == "merge_request_event"',
                                        "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"]


def merge_request(job_dir, artifact_files):
    """The predefined variables of a merge request pipeline targeting main, the API served by the
    same loopback server; the target branch's artifact of this job holds `artifact_files`."""
    download = job_dir["releases"] / "api/v4/projects/42/jobs/artifacts/main/download"
    if artifact_files is not None:
        download.parent.mkdir(parents=True)
        with zipfile.ZipFile(download, "w") as z:
            for name, text in artifact_files.items():
                z.writestr(name, text)
    return {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_API_V4_URL": job_dir["url"] + "/api/v4",
            "CI_PROJECT_ID": "42", "CI_JOB_NAME": "drainwatch", "CI_JOB_TOKEN": "job-token-1"}


def test_gitlab_merge_request_is_judged_against_the_target_branchs_artifact(job_dir):
    other_ci.REQUESTS.clear()
    env = merge_request(job_dir, {"report/verdict.json": "{}", "report/rollout/report.json": "{}"})
    out = gitlab(job_dir, **env)
    assert out.returncode == 0, out.stdout + out.stderr
    args = started_with(job_dir)
    assert args[args.index("--baseline") + 1] == ".baseline/report", args
    assert (job_dir["work"] / ".baseline/report/rollout/report.json").is_file()
    api = [(p, h) for p, h in other_ci.REQUESTS if "/jobs/artifacts/" in p]
    assert len(api) == 1, other_ci.REQUESTS
    path, headers = api[0]
    assert path == "/api/v4/projects/42/jobs/artifacts/main/download?job=drainwatch", path
    assert headers.get("JOB-TOKEN") == "job-token-1", headers


def test_gitlab_merge_request_without_a_baseline_warns_and_runs_without(job_dir):
    out = gitlab(job_dir, **merge_request(job_dir, None))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "drainwatch: no baseline from main" in out.stdout
    args = started_with(job_dir)
    assert args[args.index("--baseline") + 1] == "", args


def test_gitlab_default_branch_runs_without_a_baseline(job_dir):
    other_ci.REQUESTS.clear()
    assert gitlab(job_dir).returncode == 0
    args = started_with(job_dir)
    assert args[args.index("--baseline") + 1] == "", args
    assert not [p for p, _ in other_ci.REQUESTS if "/jobs/artifacts/" in p], "a default-branch run fetched a baseline"


def test_gitlab_missing_release_is_a_tool_failure(job_dir):
    out = gitlab(job_dir, DRAINWATCH_VERSION="v0.0.0-missing")
    assert out.returncode == 2, out.stderr
    assert "cannot download drainwatch-x86_64-linux-musl" in out.stderr
    assert not job_dir["record"].exists()


# --- Jenkins ------------------------------------------------------------------------------------


def jenkins(job_dir, code=0, **overrides):
    env = {**job_dir["env"], "STUB_EXIT": str(code), "KUBECONFIG": str(job_dir["kubeconfig"])}
    return other_ci.run_jenkins(job_dir["work"], env, {"DRAINWATCH_RELEASES": job_dir["url"], **overrides})


def test_jenkins_pipeline_pins_the_crate_version():
    env, body = other_ci.jenkins_parts()
    assert env["DRAINWATCH_VERSION"] == VERSION
    assert "--out report" in body


@pytest.mark.parametrize("code", [0, 1, 2, 130])
def test_jenkins_sh_step_returns_drainwatchs_code(job_dir, code):
    out = jenkins(job_dir, code)
    assert out.returncode == code, out.stderr
    args = started_with(job_dir)
    assert args[args.index("--image") + 1] == f"ghcr.io/drainwatch/drainwatch:{VERSION}"
    assert (job_dir["work"] / "report" / "junit.xml").is_file()


def test_jenkins_refuses_a_tampered_binary(job_dir):
    with open(job_dir["asset"], "ab") as f:
        f.write(b"\n# tampered\n")
    out = jenkins(job_dir)
    assert out.returncode == 2, out.stderr
    assert not job_dir["record"].exists(), "the tampered binary ran"


@pytest.mark.parametrize("code, result, error", [
    (0, "SUCCESS", None),
    (1, "FAILURE", "drainwatch: a threshold was missed (see the test results)"),
    (2, "FAILURE", "drainwatch: no verdict (exit 2): see the log"),
    (130, "FAILURE", "drainwatch: no verdict (exit 130): see the log"),
])
def test_jenkins_pipeline_maps_the_exit_code_and_always_keeps_the_report(job_dir, code, result, error):
    assert shutil.which("groovy"), "Debian's groovy runs the Jenkinsfile: .ci/setup-test-tools.sh installs it"
    env = {**job_dir["env"], "STUB_EXIT": str(code)}
    record = other_ci.run_jenkins_pipeline(job_dir["work"], env, job_dir["kubeconfig"],
                                           {"DRAINWATCH_RELEASES": job_dir["url"]})
    assert record["sh"] == [code]
    assert (record["result"], record["error"]) == (result, error)
    assert record["junit"] == [{"testResults": "report/junit.xml", "exists": True}]
    assert record["archive"] == [{"artifacts": "report/**", "exists": True}]
    # withCredentials' file reached the binary as KUBECONFIG
    assert (job_dir["record"].parent / "record.kubeconfig").read_text() == KUBECONFIG_TEXT


# --- Buildkite ----------------------------------------------------------------------------------


def buildkite(job_dir, code=0, **overrides):
    # `buildkite-agent secret get kubeconfig` stands in for Buildkite secrets: prints the file
    bin_dir = job_dir["work"].parent / "agent-bin"
    bin_dir.mkdir(exist_ok=True)
    agent = bin_dir / "buildkite-agent"
    agent.write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "secret get kubeconfig" ] || exit 3\ncat "{job_dir["kubeconfig"]}"\n')
    agent.chmod(0o755)
    env = {**job_dir["env"], "STUB_EXIT": str(code), "PATH": f"{bin_dir}:{job_dir['env']['PATH']}"}
    step = other_ci.buildkite_pipeline()["steps"][0]
    return other_ci.run_buildkite(step, job_dir["work"], env, {"DRAINWATCH_RELEASES": job_dir["url"], **overrides})


def test_buildkite_pipeline_keeps_and_annotates_the_report():
    steps = other_ci.buildkite_pipeline()["steps"]
    assert len(steps) == 3
    run, wait, annotate = steps
    assert run["env"]["DRAINWATCH_VERSION"] == VERSION
    assert run["artifact_paths"] == "report/**/*"
    assert run["retry"]["automatic"] == [{"exit_status": 2, "limit": 1}]
    collector = run["plugins"][0]["test-collector#v1.11.0"]
    assert collector == {"files": "report/junit.xml", "format": "junit"}
    assert wait == {"wait": None, "continue_on_failure": True}
    assert annotate["plugins"][0]["junit-annotate#v2.7.0"]["artifacts"] == "report/junit.xml"
    assert "--out report" in other_ci.buildkite_command(run)


def test_buildkite_interpolation_check_catches_a_lone_dollar():
    with pytest.raises(ValueError, match="un-escaped"):
        other_ci.buildkite_command({"command": 'echo "$$ok" "$HOME"'})


@pytest.mark.parametrize("code", [0, 1, 2, 130])
def test_buildkite_command_exits_with_drainwatchs_code(job_dir, code):
    out = buildkite(job_dir, code)
    assert out.returncode == code, out.stderr
    assert (job_dir["record"].parent / "record.kubeconfig").read_text() == KUBECONFIG_TEXT
    args = started_with(job_dir)
    assert args[args.index("--image") + 1] == f"ghcr.io/drainwatch/drainwatch:{VERSION}"
    assert (job_dir["work"] / "report" / "junit.xml").is_file()


def test_buildkite_refuses_a_tampered_binary(job_dir):
    with open(job_dir["asset"], "ab") as f:
        f.write(b"\n# tampered\n")
    out = buildkite(job_dir)
    assert out.returncode == 2, out.stderr
    assert not job_dir["record"].exists(), "the tampered binary ran"


# --- docker run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["docker-run", "docker-run-user"])
def test_docker_run_snippets_pin_the_crate_version_and_parse_as_sh(name):
    text = other_ci.snippet(name)
    assert text.splitlines()[0] == f"image=ghcr.io/drainwatch/drainwatch:{VERSION}"
    assert '--image "$image"' in text, "the probe pods must run the container's own release"
    out = subprocess.run(["sh", "-n", "-c", text], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("name", ["docker-run", "docker-run-user", "gitlab", "jenkins", "buildkite"])
def test_snippet_shell_is_clean_under_shellcheck(tmp_path, name):
    assert shutil.which("shellcheck"), "Debian's shellcheck: .ci/setup-test-tools.sh installs it"
    if name == "gitlab":
        job = other_ci.gitlab_job()
        body, dialect = "\n".join(job["before_script"] + job["script"]), "sh"
    elif name == "jenkins":
        body, dialect = other_ci.jenkins_parts()[1], "sh"
    elif name == "buildkite":
        body, dialect = other_ci.buildkite_command(other_ci.buildkite_pipeline()["steps"][0]), "bash"
    else:
        body, dialect = other_ci.snippet(name), "sh"
    path = tmp_path / f"{name}.sh"
    path.write_text(body)
    out = subprocess.run(["shellcheck", "-s", dialect, str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


@pytest.mark.parametrize("name, schema", [("gitlab", "vendor.gitlab-ci"), ("buildkite", "vendor.buildkite")])
def test_yaml_snippet_validates_against_its_ci_schema(tmp_path, name, schema):
    """The CI's own JSON schema (SchemaStore's, as check-jsonschema vendors it; offline)."""
    path = tmp_path / f"{name}.yml"
    path.write_text(other_ci.snippet(name))
    assert yaml.safe_load(path.read_text())
    out = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "validation done" in out.stdout
