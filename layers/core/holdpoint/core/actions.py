"""What each action of a worker's answer does to the session: one handler per action type.

Pure: the engine (`engine.apply_response`) hands each action here with where it stands; a
handler opens or settles calls, raises interrupts, spawns sub-agents or ends the turn, and
raises `ProtocolError` naming the field when an action breaks the protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from holdpoint.core import budget, expiry, subagents
from holdpoint.core import interrupts as rules
from holdpoint.core.calls import apply_llm_result, open_llm_call, open_tool_call, retry_tool, settle_tool
from holdpoint.core.errors import CallHeld, DeclarationError, PolicyError, ProtocolError, Refusal
from holdpoint.core.outcomes import llm_failure
from holdpoint.core.protocols.approval import policy_of
from holdpoint.core.state import Call, Decision, Effect, SessionState, derive
from holdpoint.core.turns import finish_turn


def _refuse_held(ctx: ActionContext, call: Call) -> None:
    try:
        rules.refuse_held(ctx.state, call)
    except Refusal as exc:
        raise CallHeld(f"actions[{ctx.index}].id", exc) from None


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


def interrupt_anchor(state: SessionState, decision: Decision) -> str | None:
    """R2/R4: the head of the branch the decision was for; none before any message exists."""
    if decision.trigger.get("type") == "session.start" or not state.tree.nodes:
        return None
    return state.tree.branch_head(decision.anchor)


@dataclass
class ActionContext:
    """One action of a worker's answer: where it stands and what it answers."""

    state: SessionState
    decision: Decision
    index: int
    branch: str | None
    now: float

    @property
    def trigger_type(self) -> str | None:
        return self.decision.trigger.get("type")

    def group(self) -> str | None:
        """Siblings of the calls from one model reply share a group: one re-prompt once all settle."""
        return self.decision.call_id if self.trigger_type == "llm.finished" else self.decision.id


def _llm_call(ctx: ActionContext, action: Any) -> None:
    call_id = action.id or derive("llm", ctx.state.header.session_id, ctx.decision.id, ctx.index)
    if call_id not in ctx.state.calls:
        open_llm_call(ctx.state, call_id=call_id, request=action.wire(), anchor=ctx.branch,
                      turn_id=ctx.decision.turn_id, now=ctx.now, worker=action.handler == "worker")


def _tool_call(ctx: ActionContext, action: Any) -> None:
    args = action.arguments if isinstance(action.arguments, str) else json.dumps(action.arguments)
    call_id = action.id or derive("call", ctx.state.header.session_id, ctx.decision.id, ctx.index)
    open_tool_call(ctx.state, call_id=call_id, name=action.name, arguments=args, anchor=ctx.branch,
                   turn_id=ctx.decision.turn_id, group=ctx.group(), retry_override=action.retry, now=ctx.now,
                   handler=action.handler)


def _tool_outcome(ctx: ActionContext, action: Any) -> None:
    """`tool.result` / `tool.error`: settle the call (a retryable error may start another attempt)."""
    state = ctx.state
    call = _target_call(state, ctx.decision, action.id)
    if call is None or call.kind != "tool_call":
        raise ProtocolError(f"actions[{ctx.index}].id", "names no tool call of this session")
    if call.status != "open" or (action.attempt is not None and action.attempt != call.attempt):
        state.emit("call.result_ignored", call_id=call.id, reason="not open or replaced attempt")
        return
    _refuse_held(ctx, call)
    if action.type == "tool.result":
        settle_tool(state, call, ok=True, result=action.result)
    elif action.retryable and retry_tool(state, call, ctx.now):
        state.emit("call.retry", call_id=call.id, attempt=call.attempt, error=action.error)
    else:
        error = action.error
        if action.code or action.detail is not None:
            error = {"message": action.error, "code": action.code, "detail": action.detail}
        settle_tool(state, call, ok=False, error=error)


def _llm_outcome(ctx: ActionContext, action: Any) -> None:
    """`llm.result` / `llm.error` for a worker-run LLM call."""
    state = ctx.state
    call = state.calls.get(action.id or ctx.decision.call_id or "")
    if call is None or call.kind != "llm_call":
        raise ProtocolError(f"actions[{ctx.index}].id", "names no LLM call of this session")
    if action.attempt is not None and action.attempt != call.attempt:
        state.emit("call.result_ignored", call_id=call.id, reason="replaced attempt")
        return
    _refuse_held(ctx, call)
    if action.type == "llm.result":
        result = action.outcome()
    else:
        result = llm_failure(action.error, action.code, retryable=action.retryable)
    apply_llm_result(state, call, result, ctx.now)
    if result.get("cost"):
        budget.check(state, raised_by=f"budget:{call.id}")


def _spawn(ctx: ActionContext, action: Any) -> None:
    subagents.spawn(ctx.state, tool_call_id=action.tool_call_id, agent_id=action.agent_id,
                    session_id=action.session_id, message=action.message.wire() if action.message else None,
                    anchor=ctx.branch, turn_id=ctx.decision.turn_id, now=ctx.now, group=ctx.group())


def _send(ctx: ActionContext, action: Any) -> None:
    ctx.state.effects.append(Effect(kind="send", data={"session_id": action.session_id,
                                                       "message": action.message.wire(),
                                                       "key": f"{ctx.decision.id}:{ctx.index}"}))


def _interrupt(ctx: ActionContext, action: Any) -> None:
    """R1, R2, R12: raised at the branch's head, bound to the tool call a `tool.execute` was for."""
    state, decision = ctx.state, ctx.decision
    bound = decision.call_id if ctx.trigger_type == "tool.execute" else None
    if isinstance(action.payload, dict) and action.payload.get("toolCallId") in state.calls:
        bound = action.payload["toolCallId"]
    try:
        rules.raise_interrupt(state, interrupt_id=action.interrupt_id, reason=action.reason, payload=action.payload,
                              origin="worker", anchor=interrupt_anchor(state, decision),
                              expires_in=action.expires_in, call_id=bound, turn_id=decision.turn_id,
                              raised_by=f"{decision.id}:{ctx.index}", response_schema=action.declared_schema(),
                              approval=policy_of(action.approval), declared=expiry.Declared.of(action))
    except PolicyError as exc:  # A2: an interrupt may narrow the policy in force, never widen it
        raise ProtocolError(exc.at(f"actions[{ctx.index}].approval"), str(exc)) from None
    except DeclarationError as exc:  # A5: refused where declared, like R1's missing reason
        raise ProtocolError(f"actions[{ctx.index}].{exc.field}", str(exc)) from None


def _done(ctx: ActionContext, action: Any) -> None:
    if not rules.parking(ctx.state, ctx.branch) and ctx.trigger_type != "turn.finished":
        finish_turn(ctx.state, ctx.decision.turn_id, ok=True, data=action.data)


def _fail(ctx: ActionContext, action: Any) -> None:
    finish_turn(ctx.state, ctx.decision.turn_id, ok=False, error=action.error)


ACTIONS: dict[str, Callable[[ActionContext, Any], None]] = {
    "llm.call": _llm_call,
    "tool.call": _tool_call,
    "tool.result": _tool_outcome,
    "tool.error": _tool_outcome,
    "llm.result": _llm_outcome,
    "llm.error": _llm_outcome,
    "sub_agent.spawn": _spawn,
    "message.send": _send,
    "interrupt": _interrupt,
    "done": _done,
    "fail": _fail,
}


def apply_action(state: SessionState, decision: Decision, i: int, action: Any, branch: str | None,
                 now: float) -> None:
    """Apply action `i` of a worker's answer, made on `branch`."""
    ACTIONS[action.type](ActionContext(state, decision, i, branch, now), action)
