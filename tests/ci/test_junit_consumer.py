"""junit.xml as a real JUnit consumer reads it: junitparser is the parser of
EnricoMi/publish-unit-test-result-action."""

import json
import shutil
import subprocess

from junitparser import Failure, JUnitXml, SystemOut


def evaluate(drainwatch, run_dir, policy):
    return subprocess.run(
        [str(drainwatch), "ci", "evaluate", "--policy", policy, "--dir", str(run_dir)],
        capture_output=True,
        text=True,
    )


def test_one_suite_per_arm_one_case_per_threshold(drainwatch, run_fixture):
    r = evaluate(drainwatch, run_fixture, "tests/fixtures/ci/policies/local-fail.toml")
    assert r.returncode == 1, r.stderr
    xml = JUnitXml.fromfile(str(run_fixture / "junit.xml"))
    suites = {s.name: s for s in xml}
    assert list(suites) == ["drain", "exit-now"]
    assert (suites["drain"].tests, suites["drain"].failures, suites["drain"].errors) == (1, 0, 0)
    assert (suites["exit-now"].tests, suites["exit-now"].failures, suites["exit-now"].errors) == (3, 2, 0)
    names = [c.name for c in suites["exit-now"]]
    assert names == ["tcp drained-clean-close ≥ 100%", "tcp severed ≤ 0", "sigterm-to-last-flow-end ≤ 3s"]
    assert all(c.classname == "drainwatch.exit-now" for c in suites["exit-now"])


def test_failures_name_arm_threshold_and_measured_value(drainwatch, run_fixture):
    evaluate(drainwatch, run_fixture, "tests/fixtures/ci/policies/local-fail.toml")
    xml = JUnitXml.fromfile(str(run_fixture / "junit.xml"))
    exit_now = next(s for s in xml if s.name == "exit-now")
    cases = {c.name: c for c in exit_now}
    drained = cases["tcp drained-clean-close ≥ 100%"]
    [failure] = drained.result
    assert isinstance(failure, Failure)
    assert failure.type == "threshold-missed"
    assert failure.message == (
        "exit-now: trial-001: 0 of 3 tcp flows drained-clean-close (0%); the threshold is ≥ 100%"
    )
    severed = cases["tcp severed ≤ 0"].result[0]
    assert "3 of 3 tcp flows severed (100%); the threshold is ≤ 0" in severed.message
    assert cases["sigterm-to-last-flow-end ≤ 3s"].is_passed


def test_the_flow_table_is_in_system_out(drainwatch, run_fixture):
    evaluate(drainwatch, run_fixture, "tests/fixtures/ci/policies/local-fail.toml")
    xml = JUnitXml.fromfile(str(run_fixture / "junit.xml"))
    exit_now = next(s for s in xml if s.name == "exit-now")
    # junitparser reads testsuite-level system-out as a child element, as EnricoMi's action does.
    out = exit_now.child(SystemOut).text
    assert "trial-001 (completed, sigterm trigger, behavior exit-now)" in out
    assert "ID        PROTO  OUTCOME  MECHANISM" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("tcp-", "udp-"))]
    assert [r[0] for r in rows] == ["tcp-0001", "tcp-0002", "tcp-0003", "udp-0001", "udp-0002"]
    assert all(r[2] == "severed" for r in rows)
    # A failing testcase carries the table too, for consumers that show only testcase output.
    case = next(c for c in exit_now if c.name == "tcp severed ≤ 0")
    assert "tcp-0001  tcp    severed  rst" in case.system_out


def test_no_evidence_is_a_failure_not_a_pass(drainwatch, run_fixture):
    (run_fixture / "drain" / "report.json").unlink()
    r = evaluate(drainwatch, run_fixture, "tests/fixtures/ci/policies/local-pass.toml")
    assert r.returncode == 1, r.stderr
    xml = JUnitXml.fromfile(str(run_fixture / "junit.xml"))
    [suite] = list(xml)
    assert (suite.tests, suite.failures) == (3, 3)
    for case in suite:
        [failure] = case.result
        assert failure.type == "not-measured"
        assert "no report: the trial produced no evidence" in failure.message


def test_a_flaky_pass_is_a_retried_failure_then_a_pass_of_the_same_name(drainwatch, run_fixture, tmp_path):
    # An arm whose trial-001 missed (the exit-now report) and whose retry held (the drain
    # report): the loader groups trial-001-retry-1 with trial-001 by its directory name.
    arm = run_fixture / "retried"
    for attempt, source in [("trial-001", "exit-now"), ("trial-001-retry-1", "drain")]:
        (arm / attempt).mkdir(parents=True)
        for f in ["report.json", "events.jsonl"]:
            shutil.copy(run_fixture / source / f, arm / attempt / f)
    policy = tmp_path / "flaky.toml"
    policy.write_text(
        'version = 1\n[[arm]]\nname = "retried"\nretries = 1\n'
        'thresholds = ["tcp drained-clean-close >= 100%"]\n'
    )
    r = evaluate(drainwatch, run_fixture, str(policy))
    assert r.returncode == 0, r.stderr
    verdict = json.loads((run_fixture / "verdict.json").read_text())
    assert (verdict["verdict"], verdict["flaky"]) == ("pass", True)
    xml = JUnitXml.fromfile(str(run_fixture / "junit.xml"))
    [suite] = list(xml)
    cases = list(suite)
    assert [c.name for c in cases] == ["tcp drained-clean-close ≥ 100%"] * 2
    [retried] = cases[0].result
    assert isinstance(retried, Failure) and retried.type == "retried-attempt"
    assert retried.message.startswith("retried: trial-001: 0 of 3 tcp flows drained-clean-close")
    assert cases[1].is_passed
    assert "flaky: retried: held only after a retry" in cases[1].system_out
