"""The job summary rendered the way GitHub shows it: Markdown (GFM tables, <details>) through
marked, ```mermaid blocks through mermaid, both from npm and vendored into the page's folder
(nothing from a CDN), in Debian's headless chromium. Asserts every diagram parses and renders,
and keeps a screenshot in the test output."""

import json
import shutil
import subprocess

from conftest import chromium_flags

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>drainwatch summary</title>
<script src="marked.umd.js"></script><script src="mermaid.min.js"></script>
<style>body{font:14px -apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:16px}
table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:4px 8px}</style></head>
<body><div id="content"></div><p id="status">pending</p>
<script>
const md = %s;
document.getElementById('content').innerHTML = marked.parse(md);
for (const code of document.querySelectorAll('code.language-mermaid')) {
  const pre = document.createElement('pre');
  pre.className = 'mermaid';
  pre.textContent = code.textContent;
  code.parentElement.replaceWith(pre);
}
document.querySelectorAll('details').forEach((d) => (d.open = true));
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });
(async () => {
  const status = document.getElementById('status');
  try {
    const blocks = [...document.querySelectorAll('pre.mermaid')];
    for (const el of blocks) await mermaid.parse(el.textContent);
    await mermaid.run({ querySelector: 'pre.mermaid' });
    const svgs = document.querySelectorAll('pre.mermaid svg').length;
    const errors = document.querySelectorAll('pre.mermaid svg[aria-roledescription="error"]').length;
    status.textContent = `blocks ${blocks.length} rendered ${svgs} errors ${errors}`;
  } catch (e) {
    status.textContent = 'error: ' + (e && e.message ? e.message : e);
  }
})();
</script></body></html>
"""

K8S_EVENTS = [
    (2, "pod_deletion_timestamp_set", "drainwatch-probe deletionGracePeriodSeconds=4"),
    (3, "endpointslice_ready_false", "Pod/drainwatch-probe in drainwatch-probe-abcde (terminating=true) serving=true"),
    (1012, "endpointslice_endpoint_removed", "Pod/drainwatch-probe removed from drainwatch-probe-abcde"),
]


def with_k8s_events(report_path):
    """Adds the control-plane events a Kubernetes trial records, so every milestone kind shows."""
    r = json.loads(report_path.read_text())
    tl = r["trial"]["timeline"]
    for t_ms, event, detail in K8S_EVENTS:
        tl.append({"t_ms": t_ms, "source": "k8s", "event": event, "detail": detail})
    tl.sort(key=lambda e: e["t_ms"])
    report_path.write_text(json.dumps(r, indent=2))


def render(tmp_path, node_modules, markdown, screenshot=None):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(node_modules / "mermaid/dist/mermaid.min.js", site)
    shutil.copy(node_modules / "marked/lib/marked.umd.js", site)
    (site / "index.html").write_text(PAGE % json.dumps(markdown), encoding="utf-8")
    url = (site / "index.html").as_uri()
    dom = subprocess.run(
        chromium_flags(tmp_path / "profile-dom") + ["--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    if screenshot:
        subprocess.run(
            chromium_flags(tmp_path / "profile-shot") + [f"--screenshot={screenshot}", "--window-size=1200,2200", url],
            capture_output=True,
            timeout=120,
            check=True,
        )
    return dom


def status_of(dom):
    start = dom.index('id="status">') + len('id="status">')
    return dom[start : dom.index("<", start)]


def test_the_job_summary_renders_with_its_mermaid_timelines(drainwatch, run_fixture, node_modules, tmp_path, test_output):
    with_k8s_events(run_fixture / "exit-now" / "report.json")
    r = subprocess.run(
        [str(drainwatch), "ci", "evaluate", "--policy", "tests/fixtures/ci/policies/local-fail.toml", "--dir", str(run_fixture)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr
    step_summary = tmp_path / "step-summary.md"
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_STEP_SUMMARY": str(step_summary),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "Codertocat/Hello-World",
        "GITHUB_RUN_ID": "42",
    }
    r = subprocess.run(
        [str(drainwatch), "ci", "summary", "--dir", str(run_fixture), "--artifact-name", "drainwatch-report",
         "--artifact-url", "https://github.com/Codertocat/Hello-World/actions/runs/42/artifacts/7"],
        capture_output=True, text=True, env=env,
    )
    assert r.returncode == 0, r.stderr
    md = step_summary.read_text()
    assert md.count("```mermaid") == 2
    shot = test_output / "summary.png"
    dom = render(tmp_path, node_modules, md, screenshot=shot)
    assert status_of(dom) == "blocks 2 rendered 2 errors 0", status_of(dom)
    # The milestones of a Kubernetes trial made it into the drawn chart.
    for label in ["trigger at 0 ms", "pod terminating at 2 ms", "endpoint not ready at 3 ms",
                  "endpoint removed at 1012 ms", "SIGTERM at", "container exit code 0 at", "grace period 4 s",
                  "tcp severed x3"]:
        assert label in dom, label
    assert "Syntax error" not in dom
    assert shot.stat().st_size > 10_000
    (test_output / "summary.md").write_text(md)
    print(f"screenshot: {shot}")


def test_a_broken_diagram_would_be_caught(tmp_path, node_modules):
    """The harness itself reports a Mermaid parse error, so the test above can fail."""
    dom = render(tmp_path, node_modules, "```mermaid\ngantt\n    dateFormat x\n    task : :: oops\n```\n")
    assert status_of(dom).startswith("error: "), status_of(dom)
