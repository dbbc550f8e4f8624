"""The AG-UI channel (PROTOCOL.md §7): a run applies `resume[]` through the resume path and the
client's `messages` as a `client.messages` view, then follows the turn through the event log
until it finishes, fails or parks, within one long-poll (`streams.cap()`, 25 s)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from holdpoint.bridges.agui import models
from holdpoint.bridges.agui import translation as agui
from holdpoint.core import interrupts as rules
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.client import ClientMessagesInput
from holdpoint.core.state import SessionState
from holdpoint.ports import Parking, Sessions, SessionsAndInterrupts, SessionStore, WorkQueue
from holdpoint.services import sessions, streams
from holdpoint.services.caller import Caller
from holdpoint.services.resume import precheck, resume


def thread(store: Sessions, caller: Caller, agent_id: str, thread_id: str) -> SessionState | None:
    """The session a thread names, if it exists and the caller may see it, and it is a
    conversation of `agent_id` (404 otherwise, as for any session); None for a new thread, whose
    id may not have the shape of Holdpoint's own (`sessions.claim`)."""
    return sessions.claim(store, caller, thread_id, agent_id=agent_id, kind="conversation", chosen=True,
                          param="threadId", creates=False)


def run(store: SessionStore, queue: WorkQueue, parking: Parking, caller: Caller, agent_id: str,
        body: models.RunAgentInput, *, wait_secs: float | None = None,
        clock: Callable[[], float] = time.monotonic) -> list[dict[str, Any]]:
    """`POST /v1/channels/ag-ui/agents/{agent_id}/run`: the run's AG-UI events."""
    deadline = streams.until(wait_secs, clock)
    state = thread(store, caller, agent_id, body.threadId)
    after = state.header.seq if state is not None else 0
    messages = agui.messages_in(body.messages)
    inp = None  # checked before anything is applied: a malformed message records nothing
    if messages and not _behind(state, messages):
        inp = ClientMessagesInput.model_validate({"type": "client.messages", "agent_id": agent_id,
                                                  "turn_id": body.runId, "messages": messages})
    _resume_all(store, parking, caller, body, exists=state is not None)
    watch = None
    if inp is not None:
        try:
            accepted = sessions.submit(store, queue, caller, body.threadId if state is not None else None, inp,
                                       new_session_id=body.threadId)
        except Refusal as exc:
            exc.param = "runId" if exc.param == "turn_id" else exc.param  # the run names its turn
            raise
        watch = accepted.turn_id
    elif state is None:  # a new thread with nothing to say: nothing to record
        if store.get_agent(caller.tenant, agent_id) is None:
            raise Refusal("not_found", f"agent {agent_id} not found", "agent_id")
        return [agui.started(body.threadId, body.runId),
                {"type": "MESSAGES_SNAPSHOT", "messages": []}, agui.ended(body.threadId, body.runId, None)]
    known = set(state.tree.nodes) if state is not None else set()
    return follow(store, caller.tenant, body.threadId, body.runId, after, watch, deadline, clock, known)


def connect(store: Sessions, caller: Caller, agent_id: str, body: models.RunAgentInput, *,
            wait_secs: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> list[dict[str, Any]]:
    """`.../connect`: follow the thread's running turn (or report its last one) without input."""
    deadline = streams.until(wait_secs, clock)
    state = thread(store, caller, agent_id, body.threadId)
    if state is None:
        raise Refusal("not_found", f"thread {body.threadId} not found", "threadId")
    return follow(store, caller.tenant, body.threadId, body.runId, state.header.seq, None, deadline, clock,
                  set(state.tree.nodes))


def _resume_all(store: SessionsAndInterrupts, parking: Parking, caller: Caller, body: models.RunAgentInput, *,
                exists: bool) -> None:
    """Every `resume[]` entry through the resume path, checked first so a bad one records nothing;
    a repeated one is a no-op (R7, A4)."""
    entries = body.resume or []
    if entries and not exists:  # the interrupts it answers cannot exist: an unknown thread, as elsewhere
        raise Refusal("not_found", f"thread {body.threadId} not found (resume[] answers an existing thread's "
                      "interrupts)", "threadId")
    for index, entry in enumerate(entries):
        with _naming(index):
            precheck(store, caller, body.threadId, entry.interruptId, agui.resume_payload(entry), entry.arguments)
    for index, entry in enumerate(entries):
        with _naming(index):
            resume(store, parking, caller, body.threadId, entry.interruptId, agui.resume_payload(entry),
                   channel="agui", arguments=entry.arguments)


def _behind(state: SessionState | None, messages: list[dict[str, Any]]) -> bool:
    """Messages that add nothing and end on the active path (at the head or before it): what a
    retried run or a resume-only run sends. They leave the head where it is; a `client.messages`
    view would move it back (R11)."""
    if state is None or any(m["id"] not in state.tree.nodes for m in messages):
        return False
    return state.tree.is_ancestor_or_self(messages[-1]["id"], state.tree.head_id)


@contextmanager
def _naming(index: int) -> Iterator[None]:
    """A resume refusal, its `param` naming the field of the `resume[]` entry."""
    try:
        yield
    except Refusal as exc:
        param = exc.param or ""
        if param.startswith("payload.payload"):
            param = param.removeprefix("payload.")
        elif param == "interrupt_id":
            param = "interruptId"
        exc.param = f"resume[{index}].{param}" if param else f"resume[{index}]"
        raise


def follow(store: Sessions, tenant: str, thread_id: str, run_id: str, after: int, watch: str | None,
           deadline: float, clock: Callable[[], float], known: set[str]) -> list[dict[str, Any]]:
    """RUN_STARTED, the messages the turn records (those not in `known`; woken by events after
    `after`), then how it ended:
    RUN_FINISHED (success, or an interrupt outcome when it parks) or RUN_ERROR; or, when the
    long-poll cap comes first, a `holdpoint.continue` event (the client connects again)."""
    out = [agui.started(thread_id, run_id)]
    first = True
    while True:
        if not first:
            streams.wait_events(store, tenant, thread_id, after, 1, deadline - clock())
        first = False
        state = store.load(tenant, thread_id)
        if state is None:
            raise Refusal("not_found", f"thread {thread_id} not found", "threadId")
        out += agui.events_out(state, known)
        after = state.header.seq
        watch = watch or state.header.active_turn or state.header.last_turn
        end = _ending(state, thread_id, run_id, watch)
        if end is not None:
            return [*out, agui.snapshot(state), end]
        if clock() >= deadline:
            return [*out, agui.to_continue(thread_id, run_id, after)]


def _ending(state: SessionState, thread_id: str, run_id: str, watch: str | None) -> dict[str, Any] | None:
    """How the run ends now, if it does: parked at the head, or the watched turn over."""
    parking = rules.active_parking(state)
    if parking:
        return agui.parked(thread_id, run_id, parking)
    turn = state.turns.get(watch or "")
    if turn is None:
        return None if rules.status(state) == "running" else agui.ended(thread_id, run_id, None)
    if turn.status in ("done", "failed"):
        return agui.ended(thread_id, run_id, turn)
    return None
