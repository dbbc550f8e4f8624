"""The built artifact's bytecode: one step, run by `make deploy` before `sam deploy` and by the container
tier before it invokes, so what the tests run is what AWS gets.

Lambda's /var/task and /opt are read-only, so a module with no usable .pyc there is compiled from its
source on every cold start, and the result is thrown away. `sam build` writes no .pyc (its pip builder
unpacks wheels without compiling, and copies the layer's sources as they are), and `sam deploy` zips
every file dated 1980-01-01, so a .pyc checked against its source's timestamp would never match
either. Compiled with `--invalidation-mode unchecked-hash`, each .pyc is taken as it is, with no look
at the source. The compiling interpreter must be the runtime's version (template.yaml's
`python3.13`): the runtime only reads a .pyc with its own tag and magic number.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

RUNTIME = "python3.13"
"""template.yaml's `Runtime`, and the name of the interpreter that compiles for it."""


def command(build_dir: Path | str, python: Path | str) -> list[str]:
    """Compile every module of `build_dir` (the layer, its wheels and the functions) with `python`."""
    return [str(python), "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
            str(build_dir)]


def compile_artifact(build_dir: Path, python: Path) -> None:
    """Run `command`, raising with its output when it fails."""
    done = subprocess.run(command(build_dir, python), capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise AssertionError(done.stdout[-2000:] + done.stderr[-2000:])
