"""Waiting for a session's new events: the one long-poll behind the SSE event stream, the JSON
long-poll and the AG-UI channel.

API Gateway HTTP APIs buffer a Lambda's answer and give up on it after 30 s, so a client cannot
hold a stream open: it asks for the events after the last `seq` it has, the answer comes as soon
as at least one exists (or empty after at most `MAX_WAIT_SECS`), and the client asks again. The
wait polls the event log with one strongly consistent Query (`Limit`ed) per round, with a bounded
backoff: an idle waiter makes about 100 small reads (0.5 read units each) in 25 s, a small cost
beside the Lambda instance it holds for those 25 s, and an event reaches it within 250 ms of its
commit plus one Query (bench/README.md (f)).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from holdpoint.core.errors import QuotaExceeded, Refusal
from holdpoint.ports import Sessions, WaitLeases
from holdpoint.services.caller import Caller

T = TypeVar("T")

MAX_WAIT_SECS = 25.0
"""The longest a request waits: below API Gateway's 30 s integration limit and the API function's
29 s timeout (template.yaml), with room for the answer."""
CAP_ENV = "HOLDPOINT_LONG_POLL_SECS"
"""Optional: a shorter cap for a deployment (or a test) that wants one; never above MAX_WAIT_SECS."""
FIRST_POLL_SECS = 0.05
MAX_POLL_SECS = 0.25
"""At 250 ms: 148 ms median, 424 ms p95 from commit to client on the local stack; at 1 s it was
207/484 ms, for a third of the idle reads (bench/README.md (f))."""
GROWTH = 1.5
TERMINAL = ("turn.finished", "turn.failed")
"""The events that end a turn."""


def cap() -> float:
    """The long-poll cap in force: `HOLDPOINT_LONG_POLL_SECS` if set (and lower), else 25 s."""
    try:
        asked = float(os.environ.get(CAP_ENV) or MAX_WAIT_SECS)
    except ValueError:
        asked = MAX_WAIT_SECS
    return max(0.0, min(asked, MAX_WAIT_SECS))


def until(wait_secs: float | None, clock: Callable[[], float] = time.monotonic) -> float:
    """When a wait of `wait_secs` (the cap when None) ends on `clock`: never later than the cap."""
    limit = cap()
    return clock() + (limit if wait_secs is None else max(0.0, min(wait_secs, limit)))


def visible(store: Sessions, caller: Caller, session_id: str) -> None:
    """404 unless the caller may read the session (its tenant; a client token's own session or the
    one it is bound to): one GetItem of the header, not a load of the whole session."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found")
    if not store.session_exists(caller.tenant, session_id, caller.owner()):
        raise Refusal("not_found", f"session {session_id} not found")


def holder(caller: Caller) -> str:
    """Who a wait lease (or a live connection) is counted against: the caller's principal, so
    every token of one end user is one caller, and an end user never shares a count with the API
    key of the same name."""
    return caller.principal()


def leased(leases: WaitLeases | None, caller: Caller, wait: Callable[[], T]) -> T:
    """Run `wait` holding one of the caller's and the tenant's stream wait leases: 429
    `quota_exceeded` (with `Retry-After`) when either limit is reached, and nothing waits."""
    if leases is None:
        return wait()
    try:
        with leases.held(caller.tenant, holder(caller)):
            return wait()
    except QuotaExceeded as exc:
        raise exc.refusal() from None


def wait_events(store: Sessions, tenant: str, session_id: str, after_seq: int, limit: int, wait_secs: float,
                *, clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> list[dict[str, Any]]:
    """The events after `after_seq` (at most `limit`), as soon as there is at least one, or `[]`
    once `wait_secs` (capped at `MAX_WAIT_SECS`) have passed. Polls at 50 ms, then 1.5x longer
    each round, at most 250 ms apart."""
    deadline = until(wait_secs, clock)
    pause = FIRST_POLL_SECS
    while True:
        items = store.events(tenant, session_id, after_seq, limit)
        left = deadline - clock()
        if items or left <= 0:
            return [e.wire() for e in items]
        sleep(min(pause, left))
        pause = min(pause * GROWTH, MAX_POLL_SECS)


def until_turn_ends(events: list[dict[str, Any]], turn_id: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The events up to and including the one that ends `turn_id` (and whether it was among them);
    all of them, and False, without a `turn_id`."""
    if turn_id is None:
        return events, False
    for index, event in enumerate(events):
        if event.get("type") in TERMINAL and (event.get("data") or {}).get("turn_id") == turn_id:
            return events[:index + 1], True
    return events, False


def page(store: Sessions, caller: Caller, session_id: str, after_seq: int, limit: int,
         wait_secs: float = 0, leases: WaitLeases | None = None) -> dict[str, Any]:
    """`GET /v1/sessions/{id}/events`: a page of the log, waiting up to `wait_secs` for one event
    (holding a wait lease when it may wait)."""
    visible(store, caller, session_id)
    items = leased(leases if wait_secs > 0 else None, caller,
                   lambda: wait_events(store, caller.tenant, session_id, after_seq, limit, wait_secs))
    next_after = items[-1]["seq"] if items else after_seq
    return {"events": items, "next_after_seq": next_after, "has_more": len(items) == limit}


def stream(store: Sessions, caller: Caller, session_id: str, after_seq: int, turn_id: str | None,
           limit: int = 100, leases: WaitLeases | None = None) -> tuple[list[dict[str, Any]], bool]:
    """`GET /v1/sessions/{id}/events/stream`: the next events (waiting up to the cap for one, under
    a wait lease), cut after the end of `turn_id` if given; and whether that turn has ended."""
    visible(store, caller, session_id)
    items = leased(leases, caller, lambda: wait_events(store, caller.tenant, session_id, after_seq, limit, cap()))
    return until_turn_ends(items, turn_id)


STATUSES = frozenset({"idle", "running", "interrupted", "done"})
"""What `GET /v1/sessions/{id}?until=` may wait for (the view's `status`, R14)."""


def view_when(store: Sessions, caller: Caller, session_id: str, statuses: frozenset[str], wait_secs: float,
              leases: WaitLeases | None = None, clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """`GET /v1/sessions/{id}?until=interrupted&wait=20`: the view as soon as its status is one of
    `statuses`, or as it stands once `wait_secs` have passed (under a wait lease while it waits):
    so a script can say "wait until it parks" without a loop of its own. Woken by the event log."""
    from holdpoint.services.sessions import owned, view  # only the API function waits on a view

    current = view(store, caller, session_id)
    if not statuses or current["status"] in statuses or wait_secs <= 0:
        return current
    deadline = until(wait_secs, clock)

    def wait() -> dict[str, Any]:
        now = current
        seq = owned(store, caller, session_id).header.seq
        while now["status"] not in statuses and clock() < deadline:
            items = wait_events(store, caller.tenant, session_id, seq, 100, deadline - clock(), clock=clock)
            seq = items[-1]["seq"] if items else seq
            now = view(store, caller, session_id)
        return now

    return leased(leases, caller, wait)
