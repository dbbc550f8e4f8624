"""The engine core: what is due in a session, the decision request, and applying outcomes.

Pure: no AWS calls. The runner (`runner.py`) loads state, asks `next_work`, makes the one
external call the work needs, then applies its outcome here and commits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from . import interrupts as rules
from .models import DecisionResponse
from .proposals import check_arguments, propose, tool_spec
from .session import Call, Decision, Effect, SessionState, Turn, derive, now_iso

DECISION_ATTEMPT_SECS = 300
DECISION_MAX_ATTEMPTS = 10


@dataclass
class Work:
    kind: str  # start_park | run_llm | deliver
    id: str


def next_work(state: SessionState) -> Work | None:
    """The next thing due, intent already committed: parks first, then LLM calls, then the
    decision queue (front-of-queue resumes first, held decisions skipped)."""
    for interrupt in state.interrupts.values():
        if interrupt.execution_arn is None and (interrupt.status == "open" or not interrupt.woken):
            return Work("start_park", interrupt.interrupt_id)
    for call in state.open_calls():
        if call.kind == "llm_call" and call.handler == "engine":
            return Work("run_llm", call.id)
    for decision in state.pending_decisions():
        if not rules.is_held(state, decision):
            return Work("deliver", decision.id)
    return None


# --- decision requests ---------------------------------------------------------------


def branch_path(state: SessionState, decision: Decision) -> list[dict[str, Any]]:
    head = state.tree.branch_head(decision.anchor)
    return [n.message for n in state.tree.path(head)]


def build_request(state: SessionState, decision: Decision) -> dict[str, Any]:
    h = state.header
    deadline = datetime.now(UTC) + timedelta(seconds=DECISION_ATTEMPT_SECS)
    open_calls = state.open_calls()
    return {
        "session_id": h.session_id,
        "decision_id": decision.id,
        "agent_id": h.agent_id,
        "identity": h.identity,
        "trigger": decision.trigger,
        "proposed": propose(state, decision),
        "state": h.state,
        "agent": h.agent,
        "calls": [c.wire() for c in open_calls],
        "pending_calls": [c.wire() for c in open_calls if c.kind == "tool_call"],
        "messages": branch_path(state, decision),
        "message_tree": state.tree.wire(),
        "ancestry": h.ancestry,
        "attempts": decision.attempts + 1,
        "deadline": deadline.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "turn_id": decision.turn_id,
    }


# --- applying a worker's response ------------------------------------------------------


class ProtocolError(ValueError):
    """A decision response that breaks the protocol; `param` names the offending field."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param


def tool_content(result: Any) -> str | list[dict[str, Any]]:
    """A tool result as the tool message's content: strings as they are, MCP objects by text."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        texts = [p.get("text", "") for p in result["content"] if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(texts)
    return json.dumps(result)


def settle_tool(state: SessionState, call: Call, *, ok: bool, result: Any = None, error: Any = None) -> None:
    """Record a tool outcome as a tool message and queue `tool.finished` (held if parked, R10)."""
    call.status = "settled"
    call.ok = ok
    call.result = result
    call.error = error
    parent = state.tree.branch_head(call.anchor)
    node_id = derive("msg", state.header.session_id, "tool", call.id)
    content = tool_content(result) if ok else (error if isinstance(error, str) else json.dumps(error))
    state.add_node(node_id, parent, {"role": "tool", "tool_call_id": call.id, "content": content})
    call.node_id = node_id
    state.touch(call)
    state.emit("call.settled", call_id=call.id, kind=call.kind, ok=ok)
    trigger: dict[str, Any] = {"type": "tool.finished", "id": call.id, "ok": ok, "name": call.name}
    if ok:
        trigger["result"] = result
    else:
        trigger["error"] = error
    state.enqueue(trigger, anchor=node_id, turn_id=call.turn_id, key=("finished", call.id), call_id=call.id)


def _target_call(state: SessionState, decision: Decision, action_id: str | None) -> Call | None:
    if action_id:
        return state.calls.get(action_id)
    if decision.trigger.get("type") == "tool.execute":
        return state.calls.get(decision.call_id or "")
    if decision.trigger.get("type") == "interrupt.resumed":
        interrupt = state.interrupts.get(decision.interrupt_id or "")
        if interrupt is not None and interrupt.call_id:
            return state.calls.get(interrupt.call_id)
    return None


def open_tool_call(state: SessionState, *, call_id: str, name: str, arguments: str, anchor: str | None,
                   turn_id: str | None, group: str | None) -> Call | None:
    if call_id in state.calls:
        return None
    spec = tool_spec(state, name) or {}
    call = Call(
        id=call_id,
        kind="tool_call",
        anchor=anchor,
        turn_id=turn_id,
        order=state.tick(),
        handler=spec.get("handler") or "worker",
        name=name,
        arguments=arguments,
        group=group,
    )
    state.put(call)
    state.emit("call.started", call_id=call_id, kind="tool_call", name=name, anchor=anchor)
    if call.handler == "worker":
        trigger = {
            "type": "tool.execute",
            "id": call_id,
            "name": name,
            "arguments": arguments,
            "input": check_arguments(state, name, arguments),
            "attempt": call.attempt,
        }
        state.enqueue(trigger, anchor=anchor, turn_id=turn_id, key=("execute", call_id, call.attempt),
                      call_id=call_id)
    return call


def open_llm_call(state: SessionState, *, call_id: str, request: dict[str, Any], anchor: str | None,
                  turn_id: str | None) -> Call:
    provider = ((state.header.agent or {}).get("llm") or {}).get("provider", "scripted")
    call = Call(
        id=call_id,
        kind="llm_call",
        anchor=anchor,
        turn_id=turn_id,
        order=state.tick(),
        handler="worker" if provider == "worker" else "engine",
        request=request,
    )
    state.put(call)
    state.emit("call.started", call_id=call_id, kind="llm_call", anchor=anchor)
    if rules.llm_call_parked(state, call):
        rules.void_call(state, call, "parked")
    return call


def finish_turn(state: SessionState, turn_id: str | None, *, ok: bool, data: Any = None, error: Any = None,
                notify: bool = True) -> None:
    turn = state.turns.get(turn_id or "")
    if turn is None or turn.status not in ("running", "suspended"):
        return
    turn.status = "done" if ok else "failed"
    turn.data = data
    turn.error = error
    state.touch(turn)
    if state.header.active_turn == turn.id:
        state.header.active_turn = None
    state.header.last_turn = turn.id
    if ok:
        state.emit("turn.finished", turn_id=turn.id, data=data)
    else:
        state.emit("turn.failed", turn_id=turn.id, error=error)
    if notify:
        state.enqueue({"type": "turn.finished"}, anchor=state.tree.head_id, turn_id=turn.id,
                      key=("turn.finished", turn.id))


def interrupt_anchor(state: SessionState, decision: Decision) -> str | None:
    """R2/R4: the head of the branch the decision was for; none before any message exists."""
    if decision.trigger.get("type") == "session.start" or not state.tree.nodes:
        return None
    return state.tree.branch_head(decision.anchor)


def apply_response(state: SessionState, decision: Decision, response: DecisionResponse) -> None:
    if decision.status != "pending":
        return
    decision.status = "delivered"
    decision.attempts += 1
    state.touch(decision)
    state.emit("decision.delivered", decision_id=decision.id, trigger=decision.trigger.get("type"))
    h = state.header
    if decision.turn_id and decision.turn_id in state.turns:
        turn = state.turns[decision.turn_id]
        if turn.status == "suspended" and h.active_turn is None:
            turn.status = "running"
            h.active_turn = turn.id
            state.touch(turn)
    if response.state is not None:
        h.state = None if response.state == {} else response.state
    if response.agent is not None:
        h.agent = response.agent
    branch = state.tree.branch_head(decision.anchor)
    for i, msg in enumerate(response.messages or []):
        node_id = msg.id or derive("msg", h.session_id, decision.id, i)
        if node_id in state.tree.nodes:
            continue
        state.add_node(node_id, branch, msg.wire())
        state.emit("message.added", message_id=node_id, role=msg.role)
        branch = node_id
    for i, action in enumerate(response.actions or []):
        kind = action.type
        if kind == "llm.call":
            call_id = action.id or derive("llm", h.session_id, decision.id, i)
            if call_id not in state.calls:
                open_llm_call(state, call_id=call_id, request=action.wire(), anchor=branch, turn_id=decision.turn_id)
        elif kind == "tool.call":
            args = action.arguments if isinstance(action.arguments, str) else json.dumps(action.arguments)
            call_id = action.id or derive("call", h.session_id, decision.id, i)
            group = decision.call_id if decision.trigger.get("type") == "llm.finished" else decision.id
            open_tool_call(state, call_id=call_id, name=action.name, arguments=args, anchor=branch,
                           turn_id=decision.turn_id, group=group)
        elif kind in ("tool.result", "tool.error"):
            call = _target_call(state, decision, action.id)
            if call is None:
                raise ProtocolError(f"actions[{i}].id", "names no tool call of this session")
            if call.status != "open" or (action.attempt is not None and action.attempt != call.attempt):
                state.emit("call.result_ignored", call_id=call.id, reason="not open or replaced attempt")
                continue
            if kind == "tool.result":
                settle_tool(state, call, ok=True, result=action.result)
            else:
                settle_tool(state, call, ok=False, error=action.error)
        elif kind == "interrupt":
            bound = decision.call_id if decision.trigger.get("type") == "tool.execute" else None
            if isinstance(action.payload, dict) and action.payload.get("toolCallId") in state.calls:
                bound = action.payload["toolCallId"]
            rules.raise_interrupt(
                state,
                interrupt_id=action.interrupt_id,
                reason=action.reason,
                payload=action.payload,
                origin="worker",
                anchor=interrupt_anchor(state, decision),
                expires_in=action.expires_in,
                call_id=bound,
                turn_id=decision.turn_id,
                raised_by=f"{decision.id}:{i}",
            )
        elif kind == "done":
            if not rules.parking(state, branch) and decision.trigger.get("type") != "turn.finished":
                finish_turn(state, decision.turn_id, ok=True, data=action.data)
        elif kind == "fail":
            finish_turn(state, decision.turn_id, ok=False, error=action.error)


def fail_decision(state: SessionState, decision: Decision, error: str, param: str | None) -> None:
    """A worker that broke the protocol: the decision fails and so does its turn."""
    if decision.status != "pending":
        return
    decision.status = "failed"
    decision.attempts += 1
    state.touch(decision)
    detail = {"message": error, "param": param} if param else {"message": error}
    state.emit("decision.failed", decision_id=decision.id, error=detail)
    finish_turn(state, decision.turn_id, ok=False, error=detail, notify=False)


def retry_decision(state: SessionState, decision: Decision, error: str) -> bool:
    """Count a failed delivery; False once the attempts are spent (the decision then fails)."""
    decision.attempts += 1
    state.touch(decision)
    state.emit("decision.retry", decision_id=decision.id, attempt=decision.attempts, error=error)
    if decision.attempts >= DECISION_MAX_ATTEMPTS:
        decision.attempts -= 1
        fail_decision(state, decision, f"worker unavailable after {DECISION_MAX_ATTEMPTS} attempts: {error}", None)
        return False
    return True


# --- LLM results -----------------------------------------------------------------------


def apply_llm_result(state: SessionState, call: Call, result: dict[str, Any]) -> None:
    """Record an LLM reply at its anchor; a call voided meanwhile is discarded unrecorded (R6)."""
    if call.status != "open":
        return
    if rules.llm_call_parked(state, call):
        rules.void_call(state, call, "parked")
        return
    call.status = "settled"
    call.ok = bool(result.get("ok"))
    call.usage = result.get("usage")
    trigger: dict[str, Any] = {"type": "llm.finished", "id": call.id, "ok": call.ok,
                               "truncated": bool(result.get("truncated"))}
    anchor = call.anchor
    if call.ok:
        node_id = derive("msg", state.header.session_id, "llm", call.id)
        message = {k: v for k, v in (result.get("message") or {}).items() if v is not None}
        message["role"] = "assistant"
        node = state.add_node(node_id, call.anchor, message)
        call.message = node.message
        call.node_id = node_id
        anchor = node_id
        trigger["message"] = node.message
        state.emit("message.added", message_id=node_id, role="assistant", call_id=call.id)
    else:
        call.error = result.get("error")
        trigger["error"] = call.error
        trigger["code"] = result.get("code")
    for key in ("usage", "cost"):
        if result.get(key) is not None:
            trigger[key] = result[key]
    usage = state.header.usage
    for key, value in (result.get("usage") or {}).items():
        if isinstance(value, (int, float)):
            usage[key] = usage.get(key, 0) + value
    if result.get("cost"):
        usage["cost"] = usage.get("cost", 0) + result["cost"]
    state.touch(call)
    state.emit("call.settled", call_id=call.id, kind="llm_call", ok=call.ok)
    state.enqueue(trigger, anchor=anchor, turn_id=call.turn_id, key=("llm.finished", call.id), call_id=call.id)


# --- parking -----------------------------------------------------------------------------


def mark_parked(state: SessionState, interrupt_id: str, execution_arn: str) -> None:
    interrupt = state.interrupts.get(interrupt_id)
    if interrupt is None or interrupt.execution_arn is not None:
        return
    interrupt.execution_arn = execution_arn
    state.touch(interrupt)


def apply_park_token(state: SessionState, interrupt_id: str, token: str) -> None:
    """Store the execution's task token; if the resume came first, complete it now (SPEC §6)."""
    interrupt = state.interrupts.get(interrupt_id)
    if interrupt is None or interrupt.task_token == token:
        return
    interrupt.task_token = token
    state.touch(interrupt)
    if interrupt.status != "open" and not interrupt.woken:
        state.effects.append(Effect(kind="send_task_success", interrupt_id=interrupt_id, token=token,
                                    output={"interrupt_id": interrupt_id}))


def apply_wake(state: SessionState, interrupt_id: str, outcome: str) -> str | None:
    """Deliver a resume or an expiry: event always, `interrupt.resumed` only if the interrupt
    parked the active branch (R8). Returns what happened, for metrics."""
    interrupt = state.interrupts.get(interrupt_id)
    if interrupt is None or interrupt.woken:
        return None
    happened = "resumed"
    if interrupt.status == "open":
        if outcome != "expired":
            return None
        interrupt.status = "expired"
        interrupt.resolution = {"status": "cancelled", "reason": "expired"}
        interrupt.responder = {"origin": "system", "subject": "expiry"}
        interrupt.resolved_at = now_iso()
        happened = "expired"
    was_parking_active = interrupt.anchor is None or interrupt.anchor in state.tree.path_ids(state.tree.head_id)
    interrupt.woken = True
    state.touch(interrupt)
    state.emit("session.interrupt_resumed", interrupt_id=interrupt_id, payload=interrupt.resolution,
               responder=interrupt.responder, expired=happened == "expired")
    if was_parking_active:
        trigger = {"type": "interrupt.resumed", "interrupt_id": interrupt_id, "payload": interrupt.resolution}
        anchor = interrupt.anchor if interrupt.anchor is not None else state.tree.head_id
        state.enqueue(trigger, anchor=anchor, turn_id=interrupt.turn_id, priority=0,
                      key=("resumed", interrupt_id, interrupt.generation), interrupt_id=interrupt_id)
    return happened


def start_turn(state: SessionState, turn_id: str) -> Turn:
    turn = Turn(id=turn_id, order=state.tick())
    state.put(turn)
    state.header.active_turn = turn_id
    state.emit("turn.started", turn_id=turn_id)
    return turn
