"""Issue 33: the soak (bench/soak.py) in short, with AWS refusals and killed invocations injected
while it runs: every invariant it checks from the table and the worker's own log must hold. It runs
in a process of its own (it starts its own local stack). No time is asserted: the figures it
prints are for `make soak`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_soak_with_faults_keeps_every_invariant() -> None:
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--rate", "1", "--duration", "60",
                          "--faults", "0.01", "--kills", "0.003", "--seed", "29"],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    lines = [line for line in run.stdout.splitlines() if not line.startswith("{")]
    invariants = [line for line in lines if line.startswith("INVARIANT ")]
    assert len(invariants) == 7, "\n".join(lines[-40:]) + run.stderr[-3000:]
    assert all(line.endswith(": held") for line in invariants), "\n".join(lines[-40:])
    assert run.returncode == 0, "\n".join(lines[-40:]) + run.stderr[-3000:]
    injected = next(line for line in lines if "injected:" in line)
    assert " 0 refusals" not in injected, injected  # the faults did fire
