"""README.md's install path for a Linux machine, run as copied: the release's static binary and
its .sha256 fetched with curl, checked with sha256sum, installed. The release is served from
loopback (other_ci.release_server) in place of github.com, and the install directory is a
temporary one in place of /usr/local/bin; nothing else of the block is changed."""

import os
import re
import stat
import subprocess

import pytest

import other_ci
from conftest import REPO

GITHUB = "https://github.com/drainwatch/action/releases/download"


def install_block():
    section = (REPO / "README.md").read_text().split("## Install\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "sha256sum -c" in b]
    assert len(blocks) == 1, blocks
    return "\n".join(line.strip() for line in blocks[0].splitlines())


def run(tmp_path, releases, asset_arch):
    block = install_block()
    assert GITHUB in block and "/usr/local/bin/drainwatch" in block, block
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    with other_ci.release_server(releases) as url:
        script = block.replace(GITHUB, url).replace("/usr/local/bin/drainwatch", str(bindir / "drainwatch"))
        # uname -m answers the machine's; the release is laid out for `asset_arch`.
        script = script.replace("$(uname -m)", asset_arch)
        return subprocess.run(["bash", "-e", "-c", script], cwd=work, capture_output=True, text=True, timeout=60), bindir / "drainwatch"


def publish(tmp_path, arch):
    binary = tmp_path / "built"
    binary.write_text("#!/bin/sh\necho drainwatch 0.2.0\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    releases = tmp_path / "releases"
    d = releases / f"v{other_ci.crate_version()}"
    d.mkdir(parents=True)
    asset = f"drainwatch-{arch}-linux-musl"
    (d / asset).write_bytes(binary.read_bytes())
    digest = subprocess.run(["sha256sum", asset], cwd=d, capture_output=True, text=True, check=True).stdout
    (d / f"{asset}.sha256").write_text(digest)
    return releases, d / asset


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_readme_install_fetches_checks_and_installs_the_binary(tmp_path, arch):
    assert f'v={other_ci.crate_version()} ' in install_block(), "the README pins another version than Cargo.toml's"
    releases, asset = publish(tmp_path, arch)
    out, installed = run(tmp_path, releases, arch)
    assert out.returncode == 0, out.stdout + out.stderr
    assert installed.read_bytes() == asset.read_bytes()
    assert os.access(installed, os.X_OK)


def test_the_readme_install_refuses_a_binary_that_does_not_match_its_checksum(tmp_path):
    releases, asset = publish(tmp_path, "x86_64")
    with open(asset, "ab") as f:
        f.write(b"# changed after its checksum\n")
    out, installed = run(tmp_path, releases, "x86_64")
    assert out.returncode != 0, out.stdout + out.stderr
    assert "FAILED" in out.stdout + out.stderr
    assert not installed.exists(), "a binary that does not match its checksum was installed"
