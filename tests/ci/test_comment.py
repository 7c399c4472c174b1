"""`drainwatch ci comment` (octocrab) against a local GitHub stand-in whose every response is
validated against GitHub's OpenAPI description, with GitHub's recorded pull_request payload.
The token's identity comes from GraphQL `viewer { login }` (`github-actions` for GITHUB_TOKEN,
writing as `github-actions[bot]`); only that identity's comments are ever edited."""

import json
import subprocess

import pytest

from conftest import TOKEN

MARKER = "<!-- drainwatch:summary key=e2e -->"


@pytest.fixture()
def judged(drainwatch, run_fixture):
    r = subprocess.run(
        [str(drainwatch), "ci", "evaluate", "--policy", "tests/fixtures/ci/policies/local-fail.toml", "--dir", str(run_fixture)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr
    return run_fixture


def comment(drainwatch, run_dir, mock, event, **env):
    base = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_REPOSITORY": "Codertocat/Hello-World",
        "GITHUB_API_URL": mock.url,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_JOB": "e2e",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "42",
    }
    base.update(env)
    if "GITHUB_OUTPUT" not in base:
        base["GITHUB_OUTPUT"] = str(run_dir.parent / "github-output")
    return subprocess.run(
        [str(drainwatch), "ci", "comment", "--dir", str(run_dir)],
        capture_output=True,
        text=True,
        env={k: v for k, v in base.items() if v is not None},
        timeout=60,
    )


def requests(mock):
    return [(r["method"], r["path"]) for r in mock.state()["requests"]]


def test_created_after_paging_through_every_comment_then_updated_not_duplicated(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(seed=250)
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    s = github_mock.state()
    assert s["problems"] == []
    # Three pages by Link headers (GitHub's /repositories/{id}/ form after the first), then POST.
    assert requests(github_mock) == [
        ("POST", "/graphql"),
        ("GET", "/repos/Codertocat/Hello-World/issues/2/comments?per_page=100"),
        ("GET", "/repositories/186853002/issues/2/comments?per_page=100&page=2"),
        ("GET", "/repositories/186853002/issues/2/comments?per_page=100&page=3"),
        ("POST", "/repos/Codertocat/Hello-World/issues/2/comments"),
    ]
    assert all(req["authorized"] for req in s["requests"])
    assert len(s["comments"]) == 251
    body = s["comments"][-1]["body"]
    assert body.startswith(MARKER + "\n## ❌ drainwatch: fail")
    assert "created" in r.stderr

    # The second run finds the comment (now on page 3) and updates it in place.
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    s = github_mock.state()
    assert s["problems"] == []
    assert len(s["comments"]) == 251, "updated, not duplicated"
    assert [m for m, _ in requests(github_mock)][-5:] == ["POST", "GET", "GET", "GET", "PATCH"]
    assert requests(github_mock)[-1] == ("PATCH", f"/repos/Codertocat/Hello-World/issues/comments/{s['comments'][-1]['id']}")
    assert "updated" in r.stderr and "page 3" in r.stderr
    assert sum(MARKER in (c["body"] or "") for c in s["comments"]) == 1


def test_a_marker_on_the_first_page_stops_the_search(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(seed=150, marker_at=5)
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    assert [m for m, _ in requests(github_mock)] == ["POST", "GET", "PATCH"]
    assert github_mock.state()["problems"] == []


def test_another_jobs_comment_is_left_alone(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(seed=3, marker_at=1, marker_body="<!-- drainwatch:summary key=other-job -->\nold")
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    s = github_mock.state()
    assert [m for m, _ in requests(github_mock)] == ["POST", "GET", "POST"]
    assert len(s["comments"]) == 4
    assert s["comments"][1]["body"].endswith("\nold")


def test_a_fork_like_403_warns_once_and_does_not_fail(drainwatch, judged, github_mock, pr_event):
    event = json.loads(pr_event.read_text())
    event["pull_request"]["head"]["repo"]["full_name"] = "a-fork/Hello-World"
    pr_event.write_text(json.dumps(event))
    github_mock.reset(seed=2, mode="forbidden")
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1, r.stdout
    assert "403 (Resource not accessible by integration)" in warnings[0]
    assert "forks get a read-only token" in warnings[0]
    s = github_mock.state()
    assert s["problems"] == [], "the 403 body is GitHub's documented error shape"
    assert len(s["comments"]) == 2
    assert TOKEN not in r.stdout + r.stderr


def test_a_404_warns_and_does_not_fail(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(mode="not-found")
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    [warning] = [line for line in r.stdout.splitlines() if line.startswith("::warning")]
    assert "404 (Not Found)" in warning and "pull-requests: write" in warning
    assert github_mock.state()["problems"] == []


def test_ghes_api_url_with_a_path_prefix(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(seed=120)
    r = comment(drainwatch, judged, github_mock, pr_event, GITHUB_API_URL=github_mock.url + "/api/v3")
    assert r.returncode == 0, r.stderr
    assert github_mock.state()["problems"] == []
    assert requests(github_mock) == [
        ("POST", "/api/graphql"),
        ("GET", "/api/v3/repos/Codertocat/Hello-World/issues/2/comments?per_page=100"),
        ("GET", "/api/v3/repositories/186853002/issues/2/comments?per_page=100&page=2"),
        ("POST", "/api/v3/repos/Codertocat/Hello-World/issues/2/comments"),
    ]


def test_no_pull_request_no_token_no_call(drainwatch, judged, github_mock, webhook_examples, tmp_path, pr_event):
    github_mock.reset(seed=1)
    push = tmp_path / "push.json"
    push.write_text(json.dumps(webhook_examples["push"][0]))
    r = comment(drainwatch, judged, github_mock, push, GITHUB_EVENT_NAME="push")
    assert r.returncode == 0 and "not a pull request" in r.stderr
    r = comment(drainwatch, judged, github_mock, pr_event, GITHUB_TOKEN=None)
    assert r.returncode == 0 and "no GITHUB_TOKEN" in r.stdout
    r = comment(drainwatch, judged, github_mock, pr_event, DRAINWATCH_COMMENT="false")
    assert r.returncode == 0 and "disabled" in r.stderr
    assert requests(github_mock) == []


def test_a_bad_token_is_a_tool_error_not_a_warning(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(seed=1)
    r = comment(drainwatch, judged, github_mock, pr_event, GITHUB_TOKEN="ghs_wrong")
    assert r.returncode == 2
    assert "github answered 401 to look up the token's identity (GraphQL viewer): Bad credentials" in r.stderr
    assert "ghs_wrong" not in r.stdout + r.stderr


def warnings_of(r):
    return [line for line in r.stdout.splitlines() if line.startswith("::warning")]


def test_another_authors_marker_comment_is_never_edited(drainwatch, judged, github_mock, pr_event):
    # Someone pasted this job's marker into their own comment: it must be left alone.
    github_mock.reset(seed=3, marker_at=1, marker_author="mallory")
    for run in (1, 2):
        r = comment(drainwatch, judged, github_mock, pr_event)
        assert r.returncode == 0, r.stderr
        s = github_mock.state()
        assert s["problems"] == [], "no edit of another author's comment reached the server"
        assert all(m != "PATCH" or p.endswith(f"/{s['comments'][-1]['id']}") for m, p in requests(github_mock))
        assert len(s["comments"]) == 4, f"run {run}: one comment of its own, created once"
        assert s["comments"][1]["body"] == MARKER + "\nold"
        assert s["comments"][1]["user"]["login"] == "mallory"
        assert s["comments"][-1]["user"]["login"] == "github-actions[bot]"
        [warning] = warnings_of(r)
        assert "ignored 1 comment(s) carrying this key's marker but not written by github-actions" in warning
        assert "by mallory" in warning
    assert [m for m, _ in requests(github_mock)] == ["POST", "GET", "POST", "POST", "GET", "PATCH"]


@pytest.mark.parametrize(
    "viewer,author",
    [("github-actions", "github-actions[bot]"), ("drainwatch-ci-user", "drainwatch-ci-user")],
    ids=["GITHUB_TOKEN", "personal token"],
)
def test_the_tokens_own_comment_is_updated_not_duplicated(drainwatch, judged, github_mock, pr_event, viewer, author):
    github_mock.reset(seed=2, viewer=viewer)
    output = judged.parent / "github-output"
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    s = github_mock.state()
    assert s["problems"] == []
    [own] = [c for c in s["comments"] if MARKER in c["body"]]
    assert own["user"]["login"] == author
    assert output.read_text() == f"comment-url={own['html_url']}\n"
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    s = github_mock.state()
    assert s["problems"] == []
    assert len(s["comments"]) == 3
    assert requests(github_mock)[-1] == ("PATCH", f"/repos/Codertocat/Hello-World/issues/comments/{own['id']}")
    assert warnings_of(r) == []
    assert output.read_text().splitlines()[-1] == f"comment-url={own['html_url']}"


def test_two_keys_leave_two_comments(drainwatch, judged, github_mock, pr_event):
    github_mock.reset(seed=1)
    for key in ("gate-good-0123abcd", "gate-bad-4567ef01", "gate-good-0123abcd"):
        r = comment(drainwatch, judged, github_mock, pr_event, DRAINWATCH_KEY=key)
        assert r.returncode == 0, r.stderr
    s = github_mock.state()
    assert s["problems"] == []
    bodies = [c["body"] for c in s["comments"][1:]]
    assert len(bodies) == 2
    assert bodies[0].startswith("<!-- drainwatch:summary key=gate-good-0123abcd -->\n")
    assert bodies[1].startswith("<!-- drainwatch:summary key=gate-bad-4567ef01 -->\n")
    assert "- key `gate-good-0123abcd`" in bodies[0]
    assert [m for m, _ in requests(github_mock)] == ["POST", "GET", "POST"] * 2 + ["POST", "GET", "PATCH"]


@pytest.mark.parametrize("viewer_mode", ["error", "forbidden"])
def test_an_unknown_identity_edits_and_creates_nothing(drainwatch, judged, github_mock, pr_event, viewer_mode):
    github_mock.reset(seed=3, marker_at=1, viewer_mode=viewer_mode)
    r = comment(drainwatch, judged, github_mock, pr_event)
    assert r.returncode == 0, r.stderr
    [warning] = warnings_of(r)
    assert "the token's identity is unknown, so no comment is edited or created" in warning
    assert "Resource not accessible by integration" in warning
    s = github_mock.state()
    assert s["problems"] == []
    assert requests(github_mock) == [("POST", "/graphql")]
    assert len(s["comments"]) == 3 and s["comments"][1]["body"].endswith("\nold")
    assert not (judged.parent / "github-output").exists()
