"""Sub-agents: a child session whose final output settles the parent's call (SPEC §4)."""

from __future__ import annotations

from typing import Any

from .calls import settle_tool
from .session import Call, Effect, SessionState, derive


def spec_for(state: SessionState, name: str) -> dict[str, Any] | None:
    for spec in (state.header.agent or {}).get("sub_agents") or []:
        if spec.get("name") == name:
            return spec
    return None


def spawn(state: SessionState, *, tool_call_id: str, agent_id: str, session_id: str | None,
          message: dict[str, Any] | None, anchor: str | None, turn_id: str | None, now: float,
          group: str | None = None) -> Call | None:
    """Open the parent's sub_agent call; the runner then creates and starts the child session."""
    if tool_call_id in state.calls:
        return None
    h = state.header
    child = session_id or derive("ses", h.tenant, h.session_id, tool_call_id)
    call = Call(id=tool_call_id, kind="sub_agent", anchor=anchor, turn_id=turn_id, order=state.tick(),
                handler="engine", name=agent_id, child_session_id=child, started_at=now, group=group)
    state.put(call)
    state.emit("call.started", call_id=call.id, kind="sub_agent", agent_id=agent_id, session_id=child, anchor=anchor)
    state.effects.append(Effect(kind="spawn", data={
        "session_id": child, "agent_id": agent_id, "call_id": call.id,
        "message": message or {"role": "user", "content": ""},
        "ancestry": [*h.ancestry, h.session_id]}))
    return call


def apply_child_result(state: SessionState, call_id: str, ok: bool, result: Any, error: Any) -> None:
    """The child's turn ended: settle the parent's call; `sub_agent.finished` is held if parked (R10)."""
    call = state.calls.get(call_id)
    if call is None or call.status != "open" or call.kind != "sub_agent":
        return
    settle_tool(state, call, ok=ok, result=result, error=error, trigger_type="sub_agent.finished")
