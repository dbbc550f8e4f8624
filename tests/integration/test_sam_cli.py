"""`make deploy`'s SAM CLI command lines and samconfig.toml's deploy keys parse in the pinned SAM CLI
(when .venv-sam holds it: `make sam-check` installs it). A check of the deployment tool, not a unit:
each `sam ... --help` starts the CLI (about 1 s each), so it runs in `make test`, not `make test-unit`.
tests/unit/test_deploy.py tests `make deploy` itself with the SAM CLI recorded."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib

import pytest

from holdpoint_local.deploy import deploy

SAM_CLI = deploy.REPO_ROOT / ".venv-sam" / "bin" / "sam"


def sam_parses(*args: str) -> int:
    """The pinned SAM CLI's exit code for `sam <args> --help`: click rejects an unknown option (2)
    before the eager --help prints and exits 0, and nothing is run against AWS."""
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    return subprocess.run([str(SAM_CLI), *args, "--help"], cwd=deploy.REPO_ROOT, env=env, capture_output=True,
                          check=False, timeout=120).returncode


@pytest.mark.skipif(not SAM_CLI.exists(), reason="no .venv-sam (make sam-check installs the pinned SAM CLI)")
def test_sam_command_lines_parse_in_the_pinned_sam_cli() -> None:
    pin = re.search(r"^aws-sam-cli==(\S+)$", (deploy.REPO_ROOT / "requirements-sam.txt").read_text(), re.M)
    version = subprocess.run([str(SAM_CLI), "--version"], capture_output=True, text=True, check=True, timeout=120)
    assert pin and version.stdout.split()[-1] == pin[1]
    assert sam_parses("deploy", "--not-a-sam-option") == 2  # the check itself can fail
    for region in ("eu-west-1", None):
        for guided in (True, False):
            for cmd in deploy.sam_commands(str(SAM_CLI), "holdpoint", region, guided):
                assert sam_parses(*cmd[1:]) == 0, cmd
    saved = tomllib.loads((deploy.REPO_ROOT / "samconfig.toml").read_text())["default"]["deploy"]["parameters"]
    args: list[str] = []  # each key SAM reads from samconfig.toml, as the option it stands for
    for name, value in saved.items():
        flag = name.replace("_", "-")
        args += [f"--{flag}"] if value is True else [f"--no-{flag}"] if value is False else [f"--{flag}", str(value)]
    assert sam_parses("deploy", *args) == 0, args
