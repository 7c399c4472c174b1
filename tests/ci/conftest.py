"""Shared fixtures of the CI-product tests (run by .ci/test-ci-product.sh).

They exercise the built `drainwatch` binary the way CI does: real JUnit parsing (junitparser),
real rendering (Debian's chromium with mermaid from npm), and GitHub's API shapes (a local server
that validates every response against @octokit/openapi, webhook payloads from
@octokit/webhooks-examples).
"""

import json
import os
import pathlib
import shutil
import subprocess
import time
import urllib.request

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("DRAINWATCH_CACHE", "/var/cache/drainwatch"))
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", CACHE / "cargo-target"))
TOKEN = "ghs_drainwatch_test_token"


@pytest.fixture(scope="session")
def drainwatch() -> pathlib.Path:
    exe = pathlib.Path(os.environ.get("DRAINWATCH_BIN", TARGET / "debug" / "drainwatch"))
    assert exe.is_file(), f"{exe} missing: build it first (cargo build)"
    return exe


@pytest.fixture(scope="session")
def node_modules() -> pathlib.Path:
    nm = pathlib.Path(os.environ.get("DRAINWATCH_CI_NODE", CACHE / "ci-node")) / "node_modules"
    assert (nm / "mermaid").is_dir(), f"{nm} missing: run .ci/setup-test-tools.sh"
    return nm


@pytest.fixture(scope="session")
def test_output() -> pathlib.Path:
    """Where tests keep what a person may want to look at afterwards (screenshots, files)."""
    out = pathlib.Path(os.environ.get("DRAINWATCH_TEST_OUTPUT", TARGET / "ci-test-output"))
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="session")
def webhook_examples(node_modules) -> dict:
    index = json.loads((node_modules / "@octokit/webhooks-examples/api.github.com/index.json").read_text())
    return {e["name"]: e["examples"] for e in index}


@pytest.fixture()
def pr_event(tmp_path, webhook_examples) -> pathlib.Path:
    """GitHub's recorded `pull_request` (opened) payload, as GITHUB_EVENT_PATH points to it."""
    opened = next(e for e in webhook_examples["pull_request"] if e["action"] == "opened")
    p = tmp_path / "event.json"
    p.write_text(json.dumps(opened))
    return p


class GithubMock:
    def __init__(self, port: int):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    def _call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST" if data is not None else "GET")
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            return json.loads(raw) if raw else None

    def reset(self, **cfg):
        self._call("/__control/reset", cfg)

    def state(self) -> dict:
        return self._call("/__control/state")


@pytest.fixture(scope="session")
def github_mock(node_modules):
    proc = subprocess.Popen(
        ["node", str(REPO / "tests/ci/github-mock/server.mjs"), "--node-modules", str(node_modules), "--token", TOKEN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # loading GitHub's OpenAPI description takes a few seconds
        assert line, "the mock GitHub server did not start"
        yield GithubMock(json.loads(line)["port"])
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture()
def run_fixture(tmp_path) -> pathlib.Path:
    """A copy of three recorded local trials laid out as a policy run (drain, exit-now, ignore)."""
    d = tmp_path / "run"
    shutil.copytree(REPO / "tests/fixtures/ci/run-local", d)
    return d


def browser() -> str:
    """Debian's chromium, or another Chromium build on PATH ($CHROMIUM wins)."""
    for name in [os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]:
        if name and shutil.which(name):
            return shutil.which(name)
    raise AssertionError("no chromium on PATH: run .ci/setup-test-tools.sh chromium")


def chromium_flags(user_data_dir: pathlib.Path) -> list:
    """Headless Chromium with nothing that reaches the network on its own."""
    return [
        browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={user_data_dir}",
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
    ]


# Probe ports, as tests/common/ports.rs hands them out to the Rust tests: a block of 200 in
# 12000-29999 (below the kernel's ephemeral range, clear of the local cluster's ports) per test
# process, under an flock in $TMPDIR/drainwatch-test-ports/ that every drainwatch test process
# takes, each port given out once. The bind check only steps over ports unrelated programs hold.
_PORTS_FIRST, _PORTS_END, _PORTS_BLOCK = 12000, 30000, 200
_ports_block = None  # (first port, the open lock file that keeps the block ours)
_ports_next = 0


def _claim_port_block():
    import fcntl

    lo, hi = (int(w) for w in pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert hi < _PORTS_FIRST or lo >= _PORTS_END, f"test ports overlap the ephemeral range {lo}-{hi}"
    lock_dir = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / "drainwatch-test-ports"
    lock_dir.mkdir(parents=True, exist_ok=True)
    blocks = (_PORTS_END - _PORTS_FIRST) // _PORTS_BLOCK
    for i in range(blocks):
        b = (os.getpid() + i) % blocks
        f = open(lock_dir / f"block-{b}.lock", "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            continue
        return (_PORTS_FIRST + b * _PORTS_BLOCK, f)
    raise AssertionError(f"all {blocks} test port blocks are locked ({lock_dir})")


def free_ports(count=3):
    """Consecutive ports free for TCP and UDP on all addresses, for a local-platform probe."""
    import socket

    global _ports_block, _ports_next
    if _ports_block is None:
        _ports_block = _claim_port_block()
    base = _ports_block[0]

    def free(port):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                return False
            finally:
                s.close()
        return True

    while True:
        first = base + _ports_next
        _ports_next += count
        assert _ports_next <= _PORTS_BLOCK, f"this test process used up its ports ({base}-{base + _PORTS_BLOCK - 1})"
        if all(free(p) for p in range(first, first + count)):
            return list(range(first, first + count))


def wait_for(pred, timeout=10.0, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
