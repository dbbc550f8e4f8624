"""`make test` on a machine that cannot install its system packages stops at once with one line
naming them (local/system-packages.sh), instead of running the page, AG-UI and container tests into
errors."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "local" / "system-packages.sh"


def run_with_path(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(SCRIPT)], env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          timeout=60)


CONTAINER_TOOLS = {"dockerd": "docker.io", "debootstrap": "debootstrap", "qemu-aarch64-static": "qemu-user-static",
                   "update-binfmts": "binfmt-support"}
"""The container tier's commands (tests/sam/) and the Debian package of each."""
WALKTHROUGH_TOOLS = ("curl", "jq", "openssl")
"""What the walkthrough runs (the README and docs/WALKTHROUGH.md, as tests/e2e/test_readme_walkthrough.py
runs them): each its own package."""


def link(bin_dir: Path, *tools: str) -> None:
    for tool in tools:
        found = shutil.which(tool, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
        assert found is not None, f"{tool} is installed by `make test` before the tests run"
        (bin_dir / tool).symlink_to(found)


def test_without_apt_the_missing_packages_are_named_in_one_line(tmp_path: Path) -> None:
    """No node, no npm, no container tools, no apt-get on PATH: exit 1, one line on stderr naming
    what to install (the qemu pair only on a host that is not arm64)."""
    link(tmp_path, "id", "uname")
    done = run_with_path(tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "nodejs" in lines[0] and "npm" in lines[0] and "apt-get install" in lines[0]
    expected = [pkg for tool, pkg in CONTAINER_TOOLS.items()
                if platform.machine() != "aarch64" or pkg not in ("qemu-user-static", "binfmt-support")]
    assert all(pkg in lines[0].replace(";", " ").split() for pkg in [*expected, *WALKTHROUGH_TOOLS]), lines[0]
    assert done.stdout == ""


def test_a_missing_docker_engine_alone_is_named(tmp_path: Path) -> None:
    """Everything but the Docker engine present: the line names docker.io and nothing else."""
    link(tmp_path, "id", "uname", "node", "npm", *WALKTHROUGH_TOOLS, *(t for t in CONTAINER_TOOLS if t != "dockerd"))
    done = run_with_path(tmp_path)
    if not Path("/usr/bin/chromium").exists():
        pytest.fail("`make test` installs chromium before the tests run")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "make test needs docker.io; install them (Debian: apt-get install docker.io) and run it again"]


def test_nothing_missing_is_a_silent_no_op(tmp_path: Path) -> None:
    """With every package present the script does nothing and says nothing (the usual case)."""
    assert Path("/usr/bin/chromium").exists(), "`make test` installs chromium before the tests run"
    link(tmp_path, "id", "uname", "node", "npm", *WALKTHROUGH_TOOLS, *CONTAINER_TOOLS)
    done = run_with_path(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
