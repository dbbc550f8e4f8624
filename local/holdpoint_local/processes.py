"""Ending the child processes the local stack and its tests start (moto, dockerd, SAM CLI)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
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


def _alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped by its parent, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def end_pid(pid: int, name: str, *, grace: float = 30.0) -> None:
    """`end` for a process another one started (a test run's dockerd, started by another worker):
    SIGTERM, then SIGKILL after `grace` seconds; nothing if `pid` is not a running `name`."""
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != name:
            return
        os.kill(pid, signal.SIGTERM)
    except (OSError, ProcessLookupError):
        return
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
