"""Sub-agents: a child session whose final output settles the parent's call (PROTOCOL.md §4).

Deadlines follow the `sub_agent` retry policy (60 s per attempt, 3 attempts, 3600 s in all by
default), read as a no-progress timeout: replacing a child that is still working would run its
tools twice. When an attempt's timer fires, a child waiting on a person (an open interrupt in it
or in its own sub-agents) is parked, not slow (R12), and a child whose session moved since the
last check is alive; both get another attempt's time. Only a child that did nothing for a whole
attempt is replaced by a new child session, and a late result from a replaced child is ignored.
"""

from __future__ import annotations

from typing import Any

from holdpoint.core.calls import arm_deadline, call_parked, settle_tool, tool_policy
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Call, Effect, SessionState, derive


def spawn(state: SessionState, *, tool_call_id: str, agent_id: str, session_id: str | None,
          message: JsonObject | None, anchor: str | None, turn_id: str | None, now: float,
          group: str | None = None) -> Call | None:
    """Open the parent's sub_agent call; the runner then creates and starts the child session."""
    if tool_call_id in state.calls:
        return None
    h = state.header
    child = session_id or derive("ses", h.tenant, h.session_id, tool_call_id)
    call = Call(id=tool_call_id, kind="sub_agent", anchor=anchor, turn_id=turn_id, order=state.tick(),
                handler="engine", name=agent_id, child_session_id=child, started_at=now, group=group,
                request={"message": message or {"role": "user", "content": ""}})
    state.put(call)
    state.emit("call.started", call_id=call.id, kind="sub_agent", agent_id=agent_id, session_id=child, anchor=anchor)
    _start_child(state, call, now)
    return call


def _start_child(state: SessionState, call: Call, now: float) -> None:
    h = state.header
    state.effects.append(Effect(kind="spawn", data={
        "session_id": call.child_session_id, "agent_id": call.name, "call_id": call.id,
        "message": (call.request or {}).get("message"), "ancestry": [*h.ancestry, h.session_id]}))
    arm_deadline(state, call, now)


def apply_child_result(state: SessionState, call_id: str, ok: bool, result: Any, error: Any,
                       child_session_id: str | None = None) -> None:
    """The child's turn ended: settle the parent's call; `sub_agent.finished` is held if parked (R10)."""
    call = state.calls.get(call_id)
    if call is None or call.status != "open" or call.kind != "sub_agent":
        return
    if child_session_id is not None and child_session_id != call.child_session_id:
        state.emit("call.result_ignored", call_id=call.id, session_id=child_session_id, reason="replaced attempt")
        return
    settle_tool(state, call, ok=ok, result=result, error=error, trigger_type="sub_agent.finished")


def apply_deadline(state: SessionState, call_id: str, attempt: int, now: float, *, child_waiting: bool,
                   child_version: int | None) -> None:
    """An attempt's deadline passed: extend it for a waiting or progressing child, else start a
    new child if the policy has an attempt left, else settle `deadline_exceeded`."""
    call = state.calls.get(call_id)
    if call is None or call.status != "open" or call.attempt != attempt or call.deadline_at is None:
        return
    if call.deadline_at > now + 1 or call_parked(state, call):
        return
    policy = tool_policy(state, call)
    within_total = now - (call.started_at or now) < policy.total_timeout_secs
    progressed = child_version is not None and child_version != (call.request or {}).get("child_version")
    if child_waiting or (progressed and within_total):
        call.request = {**(call.request or {}), "child_version": child_version}
        call.deadline_at = None
        state.touch(call)
        arm_deadline(state, call, now)
        state.emit("call.deadline_extended", call_id=call.id, session_id=call.child_session_id,
                   reason="waiting on an interrupt" if child_waiting else "making progress")
        return
    if call.attempt < policy.max_attempts and within_total:
        call.attempt += 1
        call.child_session_id = derive("ses", state.header.tenant, state.header.session_id, call.id, call.attempt)
        call.request = {k: v for k, v in (call.request or {}).items() if k != "child_version"}
        call.deadline_at = None
        state.touch(call)
        state.emit("call.retry", call_id=call.id, attempt=call.attempt, reason="deadline",
                   session_id=call.child_session_id)
        _start_child(state, call, now)
        return
    message = f"the sub-agent did not finish in {call.attempt} attempt(s)"
    settle_tool(state, call, ok=False, trigger_type="sub_agent.finished",
                error={"code": "deadline_exceeded", "message": message})
