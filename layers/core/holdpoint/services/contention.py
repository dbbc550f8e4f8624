"""The one way a writer changes a session: load, apply the rules, commit conditionally; a writer
that loses the commit to another reloads and recomputes.

Losers wait a full-jitter exponential backoff first, so a burst of writers to one session drains
in a few rounds; immediate retries kept colliding and could starve a writer.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from holdpoint.core.state import SessionState
from holdpoint.ports import Clock, Conflict, Interfered, Sessions
from holdpoint.services.errors import Contended

ATTEMPTS = 16
BASE_SECS = 0.01
CAP_SECS = 0.4  # worst case across all attempts about 4.6 s, well inside API Gateway's 29 s
T = TypeVar("T")


class Transact(Protocol):
    """The engine's commit of one step (`Runner.transact`): `mutate` applied and committed, then
    the effects it asked for run; the step services commit through it."""

    def __call__(self, tenant: str, session_id: str, mutate: Callable[[SessionState], T],
                 loaded: SessionState | None = None, *, head_only: bool = False) -> tuple[SessionState, T]: ...


def backoff(attempt: int) -> float:
    """Upper bound of the pause after losing attempt `attempt` (counting from 0)."""
    return min(CAP_SECS, BASE_SECS * float(2 ** attempt))


def pause(attempt: int) -> None:
    time.sleep(random.uniform(0, backoff(attempt)))


def transact(store: Sessions, load: Callable[[], SessionState], mutate: Callable[[SessionState], T], *,
             clock: Clock = time.time, retry: bool = True,
             on_conflict: Callable[[], None] | None = None) -> tuple[SessionState, T]:
    """Apply `mutate` to the state `load` gives and commit it; on a conflict, back off, reload and
    recompute (or, with `retry=False`, give up at once: creating a session that already exists).
    `load` may raise (a refusal, a missing session); `mutate` may raise to write nothing."""
    for attempt in range(ATTEMPTS):
        state = load()
        state.now = clock()
        out = mutate(state)
        try:
            store.commit(state)
        except Conflict as exc:
            if on_conflict is not None:
                on_conflict()
            if not retry and not isinstance(exc, Interfered):  # a condition failed: it exists
                raise Contended("the session was created concurrently") from None
            pause(attempt)
            continue
        return state, out
    raise Contended(f"lost the session's commit {ATTEMPTS} times in a row")
