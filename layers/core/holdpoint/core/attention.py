"""What in a session needs a person: the console's "Needs attention" lane.

A session needs attention while its worker does not take what the engine delivers: a decision
waiting to be delivered again (`retrying`: the worker is down, answers an error, or a secret it
needs is not set), or one that failed for good (`failed`: its attempts ran out, or the worker
broke the protocol). The engine records it on the session's header as it happens and clears it
when a delivery next succeeds; the header's listing indexes it, so the lane is one Query.

`advice` says what to do about a reason, in the words of the failure it reads. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from holdpoint.core.state import SessionState, iso_ms

Kind = Literal["retrying", "failed"]
REASON_CHARS = 300
"""How much of a failure's text the header keeps."""


@dataclass(frozen=True)
class Hint:
    """A failure text's telltale, and what to do about it."""

    says: tuple[str, ...]
    advice: str


HINTS = (
    Hint(("HTTP 401", "HTTP 403", "signature"),
         "the worker refused the request's signature: is HOLDPOINT_WORKER_SECRET (the secret `worker.secret` names) "
         "the same on both sides?"),
    Hint(("is not set", "not allowed", "secret"),
         "the worker's secret reference cannot be read here: set it where the engine runs, or declare the agent "
         "with a reference this deployment allows"),
    Hint(("timed out", "timeout", "Connection refused", "unreachable", "Name or service not known"),
         "the worker does not answer: is it running, and can the engine reach its URL?"),
    Hint(("HTTP 5",), "the worker answered with a server error: see its logs"),
    Hint(("protocol", "validation", "actions[", "messages["),
         "the worker's answer broke the protocol: see the error's field, and the decision it answered"),
)


def advice(reason: str) -> str:
    """What a person can do about a failed delivery, read off its text."""
    for hint in HINTS:
        if any(word.lower() in reason.lower() for word in hint.says):
            return hint.advice
    return "see the worker's logs, and the session's events for each attempt"


def record(state: SessionState, kind: Kind, reason: str) -> None:
    """A delivery is retrying or has failed: the session needs attention, since the first time."""
    held = state.header.attention or {}
    since = held.get("since") if held.get("kind") in ("retrying", kind) else None
    state.header.attention = {"kind": kind, "reason": reason[:REASON_CHARS], "since": since or iso_ms(state.now)}


def clear(state: SessionState) -> None:
    """A delivery succeeded: whatever needed attention is over."""
    state.header.attention = None
