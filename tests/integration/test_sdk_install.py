"""The SDK installs alone (`pip install ./sdk`) into a fresh venv, apart from the server's layer:
the `holdpoint` command runs, the wire models it carries are the server's own files, and nothing
of the server's runtime (boto3, Powertools) comes with it."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

CHECK = """
import holdpoint.core.protocols.client as wire, holdpoint_sdk.runs as runs, importlib.util, sys
assert wire.__file__.startswith(sys.prefix), wire.__file__
try:
    runs.Ask("i1", "x", expires_in=0)
    runs.ask(None, "r1", "a", [runs.Ask("i1", "x", expires_in=0)])
except Exception as exc:
    print(type(exc).__name__)
print(sorted(m for m in ("boto3", "aws_lambda_powertools", "botocore") if importlib.util.find_spec(m)))
print(wire.__file__)
"""


def test_sdk_installs_alone_into_a_fresh_venv(tmp_path: Path) -> None:
    source = tmp_path / "sdk"
    shutil.copytree(ROOT / "sdk", source, symlinks=False,  # the checkout stays clean of build files
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)],
                               capture_output=True, text=True, timeout=600, check=False)
    assert installed.returncode == 0, installed.stderr
    helped = subprocess.run([str(venv / "bin" / "holdpoint"), "--help"], capture_output=True, text=True,
                            timeout=60, check=False, cwd=tmp_path)
    assert helped.returncode == 0 and "inbox" in helped.stdout, helped.stderr
    checked = subprocess.run([str(venv / "bin" / "python"), "-c", CHECK], capture_output=True, text=True,
                             timeout=60, check=False, cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    refused, server_runtime, wire_file = checked.stdout.splitlines()
    assert refused == "ValidationError"  # the server's own model refused the body before sending
    assert server_runtime == "[]"
    assert filecmp.cmp(wire_file, ROOT / "layers/core/holdpoint/core/protocols/client.py", shallow=False)
