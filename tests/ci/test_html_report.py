"""report.html opened the way a person opens it from the artifact: a file in Debian's headless
chromium, with no network (every host resolves to nothing). Asserts the browser logged no
console message (a blocked load, a CSP violation or a script error would be one; two canary
pages prove the log catches both), that the parsed DOM holds the timeline SVG with a lane per
terminated pod, the control-plane markers and one failure mark per recorded failure, and keeps
a screenshot in the test output."""

import html.parser
import json
import pathlib
import shutil
import subprocess

from conftest import REPO, chromium_flags

BAD = REPO / "results/2026-12-01-compare-cluster/bad/trial-001"


def offline(profile):
    return chromium_flags(profile) + [
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ]


def console_lines(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def open_page(tmp_path, page, name):
    r = subprocess.run(
        offline(tmp_path / f"profile-{name}") + ["--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.stdout, console_lines(r.stderr)


class Elements(html.parser.HTMLParser):
    """Every element's tag and attributes, as the browser serialized its DOM."""

    def __init__(self):
        super().__init__()
        self.elements = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def having(self, cls, **data):
        out = []
        for tag, a in self.elements:
            if cls not in (a.get("class") or "").split():
                continue
            if all(a.get("data-" + k.replace("_", "-")) == v for k, v in data.items()):
                out.append((tag, a))
        return out


def test_the_console_log_catches_blocked_loads_and_script_errors(tmp_path):
    blocked = tmp_path / "blocked.html"
    blocked.write_text(
        "<!doctype html><html><head><meta http-equiv=\"Content-Security-Policy\" "
        "content=\"default-src 'none'\"></head><body><img src=\"http://example.invalid/x.png\"></body></html>"
    )
    error = tmp_path / "error.html"
    error.write_text("<!doctype html><html><body><script>console.error('canary')</script></body></html>")
    _, lines = open_page(tmp_path, blocked, "blocked")
    assert any("violates the following Content Security Policy" in line for line in lines), lines
    _, lines = open_page(tmp_path, error, "error")
    assert any('"canary"' in line for line in lines), lines


def test_report_html_of_a_bad_shutdown_run_opens_offline_with_its_timeline(drainwatch, tmp_path, test_output):
    out = tmp_path / "out"
    r = subprocess.run(
        [str(drainwatch), "report", "--events", str(BAD / "events.jsonl"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    # Alone in its folder: nothing beside it could be loaded even if the page asked.
    site = tmp_path / "site"
    site.mkdir()
    page = site / "report.html"
    shutil.copy(out / "report.html", page)
    report = json.loads((out / "report.json").read_text())
    attach = report["trial"]["attach"]

    dom, lines = open_page(tmp_path, page, "dom")
    assert lines == [], lines
    p = Elements()
    p.feed(dom)
    assert len([e for e in p.elements if e[0] == "svg" and "timeline" in e[1].get("class", "")]) == 1

    pods = [x["pod"] for x in attach["pods"]]
    assert len(pods) == 2
    lanes = p.having("lane", kind="pod")
    assert sorted(a["data-pod"] for _, a in lanes) == sorted(pods)
    assert len(p.having("marker", event="trigger")) == 1
    for pod in pods:
        for event in ["deletion", "endpoint-not-ready", "endpoint-removed", "container-exit"]:
            assert len(p.having("marker", event=event, pod=pod)) == 1, (pod, event)
    fails = p.having("fail")
    assert len(fails) == len(attach["failures"]) == 28
    for f in attach["failures"]:
        assert p.having("fail", pod=f["pod"], flow=f["flow_id"], t_ms=str(f["t_ms"]), mechanism=f["mechanism"]), f
    assert p.having("finding", finding="endpoint-lag", severity="failure")

    shot = test_output / "report-html.png"
    subprocess.run(
        offline(tmp_path / "profile-shot") + [f"--screenshot={shot}", "--window-size=1200,1100", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 20_000
