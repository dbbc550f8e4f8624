"""`make test` on a machine that cannot install its system packages stops at once with one line
naming them (local/system-packages.sh), instead of running the page and AG-UI tests into errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = ROOT / "local" / "system-packages.sh"


def run_with_path(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(SCRIPT)], env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          timeout=60)


def test_without_apt_the_missing_packages_are_named_in_one_line(tmp_path: Path) -> None:
    """No node, no npm, no apt-get on PATH: exit 1, one line on stderr naming what to install."""
    found = shutil.which("id")
    assert found is not None
    (tmp_path / "id").symlink_to(found)
    done = run_with_path(tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "nodejs" in lines[0] and "npm" in lines[0] and "apt-get install" in lines[0]
    assert done.stdout == ""


def test_nothing_missing_is_a_silent_no_op(tmp_path: Path) -> None:
    """With every package present the script does nothing and says nothing (the usual case)."""
    assert Path("/usr/bin/chromium").exists(), "`make test` installs chromium before the tests run"
    for tool in ("node", "npm", "id"):
        found = shutil.which(tool)
        assert found is not None, f"{tool} is installed by `make test` before the tests run"
        (tmp_path / tool).symlink_to(found)
    done = run_with_path(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
