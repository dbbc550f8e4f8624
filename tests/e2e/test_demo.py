"""Issue 32: `make demo` checks what it prints. With the engine's StartExecution grant removed from
a copy of the template, the park cannot start: the demo must say what went wrong and exit non-zero
(it printed `ParkBranch execution: NOT FOUND` and exited 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRANT = """        - StepFunctionsExecutionPolicy:
            StateMachineName: !GetAtt ParkBranchStateMachine.Name
"""


def test_demo_fails_loudly_when_the_park_cannot_start(tmp_path: Path) -> None:
    template = (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert template.count(GRANT) == 1, "the engine's StartExecution grant moved; update this test"
    broken = tmp_path / "template.yaml"
    broken.write_text(template.replace(GRANT, ""), encoding="utf-8")
    env = {**os.environ, "HOLDPOINT_TEMPLATE": str(broken), "HOLDPOINT_PORT": "0",
           "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("local", "layers/core", "."))}
    run = subprocess.run([sys.executable, "-m", "holdpoint_local.demo"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert "demo: FAIL: the ParkBranch execution" in out and "NOT FOUND, wanted RUNNING" in out, out[-3000:]
