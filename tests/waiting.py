"""The one way tests wait: on a signal (a condition that becomes true), never for a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
POLL_SECS = 0.05


def wait_for(check: Callable[[], T], what: str, timeout: float = 60.0, describe: Callable[[], Any] | None = None,
             poll: float = POLL_SECS) -> T:
    """Poll `check` (every `poll` seconds) until it returns something truthy and return that; fail
    naming `what` (and `describe()`, the state last seen) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        out = check()
        if out:
            return out
        if time.monotonic() >= deadline:
            seen = f"; last seen: {describe()}" if describe is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{seen}")
        time.sleep(poll)


def wait_quiet(stack: Any, timeout: float = 60.0, stable: int = 3) -> None:
    """Wait until the local stack has no work anywhere (`LocalStack.quiet`) for `stable` polls in a
    row: after it, anything a test says did not happen would already have happened."""
    streak = [0]

    def settled() -> bool:
        streak[0] = streak[0] + 1 if stack.quiet() else 0
        return streak[0] >= stable

    wait_for(settled, "the stack to go quiet", timeout)


def wait_until_epoch(epoch: float, what: str, timeout: float = 60.0) -> None:
    """Wait for the wall clock itself, where the clock is what a test is about (an expiry)."""
    wait_for(lambda: time.time() >= epoch, what, timeout)
