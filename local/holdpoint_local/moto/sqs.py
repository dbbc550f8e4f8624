"""Fix 7 to moto 5.2.5's SQS.

7. **A FIFO message group is in flight with one receiver at a time.** moto notes which groups
   are in flight once, when a `ReceiveMessage` starts, and keeps that note for the whole long
   poll: a receiver that began waiting before another took a group's message could then take the
   group's next message while the first was still in flight, and two engine invocations would
   work on one session at once (SQS never does that). A receive now waits in rounds that each
   look at the groups in flight afresh, one receive at a time.

It changes no answer moto gives.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.sqs.models import SQSBackend

_SQS_LOCK = threading.Lock()
SQS_ROUND_SECS = 0.01  # the longest a waiting receive goes without looking again (a group freed)


def _deliverable(queue: Any) -> bool:
    """A visible message whose FIFO group is not in flight: what a waiting receive wakes up for."""
    in_flight = queue.pending_message_groups if queue.fifo_queue else set()
    return any(m.group_id is None or m.group_id not in in_flight for m in queue.messages)


def _wait_round(queue: Any, timeout: float) -> None:
    with queue._messages_lock:
        queue._messages_lock.wait_for(lambda: _deliverable(queue), timeout=timeout)


def _fresh_receive(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 7: a long poll as rounds of moto's receive with no wait, each under one lock, so each
    round sees the groups in flight as they are and no other receive runs inside it. Between
    rounds it waits on the queue as moto does (a new message wakes it at once), looking again at
    least every `SQS_ROUND_SECS` for a group that a deleted message freed."""

    @functools.wraps(original)
    def receive(self: SQSBackend, queue_name: str, count: int, wait_seconds_timeout: int, visibility_timeout: int,
                message_attribute_names: list[str] | None = None) -> list[Any]:
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        queue = self.get_queue(queue_name)
        while True:
            with _SQS_LOCK:
                got = original(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
            left = deadline - time.monotonic()
            if got or left <= 0:
                return got  # type: ignore[no-any-return]
            _wait_round(queue, min(left, SQS_ROUND_SECS))

    receive.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return receive



def apply() -> None:
    """Install fix 7 (`holdpoint_local.moto.apply` calls this once)."""
    SQSBackend.receive_message = _fresh_receive(SQSBackend.receive_message)  # type: ignore[method-assign]
