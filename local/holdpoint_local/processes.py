"""Ending the child processes the local stack and its tests start (moto, dockerd, SAM CLI)."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def end(proc: subprocess.Popen[Any], *, sig: int = signal.SIGTERM, grace: float = 30.0) -> None:
    """Ask a child to stop with `sig` (SIGINT for one that cleans up on Ctrl-C), and kill it if it
    has not within `grace` seconds."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
