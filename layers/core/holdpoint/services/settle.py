"""Settling a deferred or client call (tool or worker LLM) from outside the worker (PROTOCOL.md §4)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from holdpoint.core import budget
from holdpoint.core import interrupts as rules
from holdpoint.core.calls import apply_llm_result, settle_tool
from holdpoint.core.errors import Refusal
from holdpoint.core.outcomes import llm_failure, llm_reply
from holdpoint.core.protocols.client import SettleBody
from holdpoint.core.state import Call, SessionState
from holdpoint.ports import Clock, Sessions, WorkQueue
from holdpoint.services.caller import Caller
from holdpoint.services.sessions import changed, owned


@dataclass(frozen=True)
class Settled:
    """A call's outcome recorded (the edge renders it)."""

    id: str


def settle(store: Sessions, queue: WorkQueue, caller: Caller, session_id: str, body: SettleBody,
           clock: Clock = time.time) -> Settled:
    """Record the outcome on the call (its follow-on is held if the branch is parked, R10)."""
    state, _ = changed(store, lambda: owned(store, caller, session_id), lambda s: apply_settle(s, body), clock)
    queue.kick(caller.tenant, session_id, state.header.version)
    return Settled(body.id)


def open_call(state: SessionState, body: SettleBody) -> Call:
    """The call a settle names: it must exist, be of the settle's kind, be open at that attempt,
    and not be held by an open interrupt (R12)."""
    call = state.calls.get(body.id)
    wanted = "llm_call" if body.type.startswith("llm.") else "tool_call"
    if call is None or call.kind != wanted:
        raise Refusal("not_found", f"call {body.id} not found", "id")
    if call.status != "open" or (body.attempt is not None and body.attempt != call.attempt):
        raise Refusal("call_not_open", f"call {body.id} is not open for attempt {body.attempt or call.attempt}", "id")
    rules.refuse_held(state, call)
    return call


def apply_settle(state: SessionState, body: SettleBody) -> None:
    call = open_call(state, body)
    error = body.error if body.error is not None else "error"
    if body.type == "tool.result":
        settle_tool(state, call, ok=True, result=body.result)
    elif body.type == "tool.error":
        settle_tool(state, call, ok=False, error=error)
    elif body.type == "llm.result":
        if body.message is None:
            raise Refusal("validation_error", "llm.result needs a message", "message")
        apply_llm_result(state, call, llm_reply(body.message.wire(), usage=body.usage, cost=body.cost), state.now)
        if body.cost:
            budget.check(state, raised_by=f"budget:{call.id}")
    else:
        apply_llm_result(state, call, llm_failure(error, body.code), state.now)
    if call.status == "voided":  # R6: a late result on a parked branch is discarded, never recorded
        raise Refusal("call_not_open", f"call {body.id} was voided", "id")
