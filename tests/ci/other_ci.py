"""Run the CI snippets of docs/other-ci.md the way each CI would run their shell.

Used by tests/ci/test_other_ci.py (a stand-in binary, no cluster) and by
tests/ci/docker-run-cluster.sh (`python3 tests/ci/other_ci.py gitlab ...`: the real binary against
the local cluster). A snippet is the fenced block right after `<!-- snippet: NAME -->`, so what
runs is what the doc shows; each emulation says which part of the CI it stands in for.
"""

import argparse
import contextlib
import functools
import hashlib
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import threading

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "other-ci.md"
ASSET = "drainwatch-x86_64-linux-musl"  # the release asset name (.github/workflows/release.yml)


def snippet(name: str, doc: pathlib.Path = DOC) -> str:
    """The fenced block that follows `<!-- snippet: NAME -->` in the doc."""
    lines = doc.read_text().splitlines()
    marker = f"<!-- snippet: {name} -->"
    hits = [i for i, line in enumerate(lines) if line.strip() == marker]
    if len(hits) != 1:
        raise LookupError(f"{doc}: {len(hits)} blocks marked {marker!r}, expected 1")
    start = hits[0] + 1
    if not lines[start].lstrip().startswith("```"):
        raise LookupError(f"{doc}:{start + 1}: {marker!r} is not followed by a fenced block")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("```"))
    # a block inside a list item is indented; the shell gets it as a user pastes it
    return textwrap.dedent("\n".join(lines[start + 1 : end]) + "\n")


def crate_version() -> str:
    text = (REPO / "Cargo.toml").read_text()
    return re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S).group(1)


# --- the release, served from loopback -------------------------------------------------------


def publish(root: pathlib.Path, version: str, binary: pathlib.Path) -> pathlib.Path:
    """Lay out ROOT/VERSION/ASSET and ASSET.sha256 as release.yml writes them (sha256sum format)."""
    d = root / version
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(binary, d / ASSET)
    digest = hashlib.sha256((d / ASSET).read_bytes()).hexdigest()
    (d / f"{ASSET}.sha256").write_text(f"{digest}  {ASSET}\n")
    return d / ASSET


@contextlib.contextmanager
def release_server(root: pathlib.Path):
    """An HTTP server on 127.0.0.1 (a free port) serving ROOT; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# Every GET the release server answered: (path with its query, the request's headers).
REQUESTS: list[tuple[str, dict]] = []


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        REQUESTS.append((self.path, dict(self.headers)))
        super().do_GET()

    def log_message(self, *args):  # the tests print what failed; request lines are noise
        pass


# --- GitLab CI ---------------------------------------------------------------------------------


def gitlab_job(name: str = "drainwatch") -> dict:
    return yaml.safe_load(snippet("gitlab"))[name]


def _expand(value: str, env: dict) -> str:
    # GitLab expands $VAR and ${VAR} of variables defined before, in `variables:` values
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), value)


def run_gitlab(job: dict, cwd: pathlib.Path, env: dict, overrides: dict) -> subprocess.CompletedProcess:
    """before_script + script in one shell, as the runner does, under BusyBox `sh -e` (Alpine's
    shell and applets: wget, sha256sum, unzip). `overrides` stand for project CI/CD variables
    and the predefined ones (CI_MERGE_REQUEST_TARGET_BRANCH_NAME, CI_JOB_TOKEN, …), which win
    over the job's `variables:`."""
    full = dict(env)
    for key, value in job.get("variables", {}).items():
        full[key] = overrides[key] if key in overrides else _expand(str(value), full)
    full.update(overrides)
    script = "\n".join(job.get("before_script", []) + job["script"])
    applets = cwd / ".busybox-bin"
    applets.mkdir(exist_ok=True)
    for applet in ("wget", "sha256sum", "unzip", "mkdir", "chmod", "mv", "echo", "cat", "rm"):
        target = applets / applet
        if not target.exists():
            target.symlink_to(shutil.which("busybox"))
    full["PATH"] = f"{applets}:{full.get('PATH', os.defpath)}"
    return subprocess.run(["busybox", "sh", "-e", "-c", script], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=600)


# --- Jenkins -----------------------------------------------------------------------------------


def jenkins_parts() -> tuple[dict, str]:
    """The pipeline's `environment {}` (single-quoted literals) and its `sh` step's script."""
    text = snippet("jenkins")
    env_block = re.search(r"environment \{(.*?)\n\s*\}", text, re.S).group(1)
    env = dict(re.findall(r"^\s*(\w+) = '([^']*)'", env_block, re.M))
    body = re.search(r"sh\(returnStatus: true, script: '''(.*?)'''\)", text, re.S).group(1)
    if "\\" in body:
        raise ValueError("the Jenkins sh body has a backslash: Groovy's ''' strings would process it")
    return env, textwrap.dedent(body)


def run_jenkins(cwd: pathlib.Path, env: dict, overrides: dict) -> subprocess.CompletedProcess:
    """The `sh` step's script as Jenkins runs one without a shebang: `sh -xe`."""
    pipeline_env, body = jenkins_parts()
    full = {**env, **pipeline_env, **overrides}
    return subprocess.run(["sh", "-xe", "-c", body], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=600)


def run_jenkins_pipeline(cwd: pathlib.Path, env: dict, kubeconfig: pathlib.Path,
                         literals: dict) -> dict:
    """The whole Jenkinsfile through Groovy with tests/ci/jenkins_stub.groovy's steps; `literals`
    replace values of its `environment {}` (the release URL served here). Returns the stub's
    record: result, error, the sh step's exit codes, what junit and archiveArtifacts got."""
    text = snippet("jenkins")
    for key, value in literals.items():
        text, n = re.subn(rf"^(\s*{key} = )'[^']*'", rf"\g<1>'{value}'", text, flags=re.M)
        if n != 1:
            raise LookupError(f"the Jenkinsfile sets {key} {n} times, expected once")
    jenkinsfile = cwd.parent / "Jenkinsfile"
    jenkinsfile.write_text(text)
    java = pathlib.Path(shutil.which("java")).resolve()
    full = {"JAVA_HOME": str(java.parent.parent), **env}
    out = subprocess.run(["groovy", str(REPO / "tests/ci/jenkins_stub.groovy"), str(jenkinsfile),
                          str(cwd), str(kubeconfig)], env=full, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"groovy failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


# --- Buildkite ---------------------------------------------------------------------------------


def buildkite_pipeline() -> dict:
    return yaml.safe_load(snippet("buildkite"))


def buildkite_command(step: dict) -> str:
    """The command after `buildkite-agent pipeline upload`'s interpolation: `$$` becomes `$`; a
    lone `$NAME` would be replaced by the uploader's environment, which is never what is meant."""
    command = step["command"]
    lone = re.findall(r"(?<!\$)\$(?!\$)[\w{(]", command.replace("$$", ""))
    if lone:
        raise ValueError(f"the command has {len(lone)} un-escaped $: upload would interpolate them")
    return command.replace("$$", "$")


def run_buildkite(step: dict, cwd: pathlib.Path, env: dict, overrides: dict) -> subprocess.CompletedProcess:
    """The step's command as the agent runs it (`bash -e -c`), with the step's env."""
    full = {**env, **{k: str(v) for k, v in step.get("env", {}).items()}, **overrides}
    return subprocess.run(["bash", "-e", "-c", buildkite_command(step)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=600)


# --- command line, for tests/ci/docker-run-cluster.sh: a snippet; the GitLab job for real ------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gitlab", help="run the GitLab job of the doc with BINARY served as the release")
    g.add_argument("--binary", type=pathlib.Path, required=True)
    g.add_argument("--workdir", type=pathlib.Path, required=True, help="the job's project directory")
    g.add_argument("--kubeconfig", required=True, help="the File variable KUBECONFIG")
    g.add_argument("--image", required=True, help="DRAINWATCH_IMAGE: the image the nodes have")
    sn = sub.add_parser("snippet", help="print the doc's block marked NAME")
    sn.add_argument("name")
    sn.add_argument("--doc", type=pathlib.Path, default=DOC, help="the markdown file (default docs/other-ci.md)")
    args = ap.parse_args()
    if args.cmd == "snippet":
        sys.stdout.write(snippet(args.name, args.doc))
        return 0
    version = "v" + crate_version()
    releases = args.workdir / ".releases"
    publish(releases, version, args.binary)
    with release_server(releases) as url:
        out = run_gitlab(gitlab_job(), args.workdir, dict(os.environ),
                         {"DRAINWATCH_RELEASES": url, "DRAINWATCH_VERSION": version,
                          "DRAINWATCH_IMAGE": args.image, "KUBECONFIG": args.kubeconfig})
    shutil.rmtree(releases)
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
