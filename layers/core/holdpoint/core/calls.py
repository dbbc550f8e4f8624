"""In-flight calls (effects): tools, LLM calls, sub-agents; their deadlines and retries."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.core import interrupts as rules
from holdpoint.core import retry, schemas
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.messages import Deadline
from holdpoint.core.outcomes import LlmOutcome, llm_failure
from holdpoint.core.proposals import check_arguments, checked_json, tool_spec
from holdpoint.core.state import Call, SessionState, derive, iso


def tool_content(result: Any) -> str:
    """A tool result as the tool message's content: strings as they are, MCP objects by text."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        texts = [p.get("text", "") for p in result["content"] if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(texts)
    return json.dumps(result)


def output_problem(state: SessionState, call: Call, result: Any) -> str | None:
    """Check a result against the tool's `output` schema (MCP `structuredContent` when present)."""
    spec = tool_spec(state, call.name or "")
    schema = spec.output if spec is not None else None
    if not schema:
        return None
    value = result
    if isinstance(result, dict) and "structuredContent" in result:
        value = result["structuredContent"]
    elif isinstance(result, str):
        try:
            value = json.loads(result)
        except ValueError:
            value = result
    failure = schemas.evaluate(schema, value)
    if failure is None:
        return None
    if not failure.judged:
        return f"the output schema {failure.message}"
    return f"result does not match the output schema: {failure.message}"


def settle_tool(state: SessionState, call: Call, *, ok: bool, result: Any = None, error: Any = None,
                trigger_type: str = "tool.finished") -> None:
    """Record a tool outcome as a tool message and queue its follow-on (held if parked, R10)."""
    if ok and call.kind == "tool_call":
        problem = output_problem(state, call, result)
        if problem:
            ok, result, error = False, None, {"code": "output_invalid", "message": problem}
    call.status = "settled"
    call.ok = ok
    call.result = result
    call.error = error
    call.deadline_at = None
    parent = state.tree.branch_head(call.anchor)
    node_id = derive("msg", state.header.session_id, "tool", call.id)
    content = tool_content(result) if ok else (error if isinstance(error, str) else json.dumps(error))
    state.add_node(node_id, parent, {"role": "tool", "tool_call_id": call.id, "content": content})
    call.node_id = node_id
    state.touch(call)
    state.emit("call.settled", call_id=call.id, kind=call.kind, ok=ok)
    trigger: JsonObject = {"type": trigger_type, "id": call.id, "ok": ok}
    if trigger_type == "sub_agent.finished":
        trigger.update(session_id=call.child_session_id, agent_id=call.name)
    else:
        trigger["name"] = call.name
    if ok:
        trigger["result"] = result
    else:
        trigger["error"] = error
    state.enqueue(trigger, anchor=node_id, turn_id=call.turn_id, key=("finished", call.id), call_id=call.id)


def tool_policy(state: SessionState, call: Call) -> retry.Policy:
    kind = "client_tool" if call.handler == "client" else "sub_agent" if call.kind == "sub_agent" else "tool"
    spec = tool_spec(state, call.name or "")
    return retry.policy(state.header.agent, kind, call.retry or (spec.retry if spec is not None else None))


def _execute_trigger(state: SessionState, call: Call) -> JsonObject:
    trigger: JsonObject = {
        "type": "tool.execute",
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments or "{}",
        "input": checked_json(check_arguments(state, call.name or "", call.arguments or "{}")),
        "attempt": call.attempt,
    }
    if call.deadline_at is not None:
        trigger["deadline"] = iso(call.deadline_at)
    return trigger


def open_tool_call(state: SessionState, *, call_id: str, name: str, arguments: str, anchor: str | None,
                   turn_id: str | None, group: str | None, retry_override: JsonObject | None = None,
                   now: float, handler: str | None = None) -> Call | None:
    if call_id in state.calls:
        return None
    spec = tool_spec(state, name)
    runs_on = handler or (spec.handler if spec is not None else None)
    call = Call(id=call_id, kind="tool_call", anchor=anchor, turn_id=turn_id, order=state.tick(),
                handler="client" if runs_on == "client" else "worker", name=name, arguments=arguments,
                group=group, retry=retry_override, started_at=now)
    state.put(call)
    state.emit("call.started", call_id=call_id, kind="tool_call", name=name, anchor=anchor)
    if call.handler == "worker":
        policy = tool_policy(state, call)
        if policy.attempt_timeout_secs != retry.UNBOUNDED:
            call.deadline_at = now + policy.attempt_timeout_secs
        state.enqueue(_execute_trigger(state, call), anchor=anchor, turn_id=turn_id,
                      key=("execute", call_id, call.attempt), call_id=call_id)
    return call


def arm_deadline(state: SessionState, call: Call, now: float) -> None:
    """A call left open after its decision gets a durable deadline timer (not while parked, R12)."""
    if call.status != "open" or call.kind not in ("tool_call", "sub_agent") or call_parked(state, call):
        return
    policy = tool_policy(state, call)
    if policy.attempt_timeout_secs == retry.UNBOUNDED:
        return
    if call.deadline_at is None or call.deadline_at < now:
        call.deadline_at = now + policy.attempt_timeout_secs
        state.touch(call)
    # keyed by the deadline too: an extended deadline (sub-agents) is a new timer, a repeat is not
    key = f"deadline/{call.id}/{call.attempt}/{call.deadline_at:.3f}"
    h = state.header
    state.schedule(call.deadline_at - now, key, Deadline(h.tenant, h.session_id, call.id, call.attempt))


def call_parked(state: SessionState, call: Call) -> bool:
    """R12: a call bound to an open interrupt, or on a parked branch, does not time out."""
    if rules.holding(state, call.id) is not None:
        return True
    return bool(rules.parking(state, call.anchor))


def apply_deadline(state: SessionState, call_id: str, attempt: int, now: float) -> None:
    """An attempt's deadline passed: retry with a new attempt, or fail `deadline_exceeded`."""
    call = state.calls.get(call_id)
    if call is None or call.status != "open" or call.attempt != attempt or call.deadline_at is None:
        return
    if call.deadline_at > now + 1 or call_parked(state, call):
        return
    if retry_tool(state, call, now):
        state.emit("call.retry", call_id=call.id, attempt=call.attempt, reason="deadline")
        return
    settle_tool(state, call, ok=False, error={"code": "deadline_exceeded",
                                              "message": f"no result after {call.attempt} attempt(s)"})


def retry_tool(state: SessionState, call: Call, now: float) -> bool:
    """Start the call's next attempt (a fresh tool.execute) if its policy has one left."""
    policy = tool_policy(state, call)
    if call.attempt >= policy.max_attempts or now - (call.started_at or now) >= policy.total_timeout_secs:
        return False
    call.attempt += 1
    call.deadline_at = None if policy.attempt_timeout_secs == retry.UNBOUNDED else now + policy.attempt_timeout_secs
    state.touch(call)
    state.enqueue(_execute_trigger(state, call), anchor=call.anchor, turn_id=call.turn_id,
                  key=("execute", call.id, call.attempt), call_id=call.id)
    return True


def open_llm_call(state: SessionState, *, call_id: str, request: JsonObject, anchor: str | None,
                  turn_id: str | None, now: float, worker: bool = False) -> Call:
    """`worker`: the `llm.call` asked for `handler: "worker"`; else the agent's provider decides."""
    llm = state.header.config().llm
    provider = llm.provider if llm is not None else "scripted"
    retry_block = request.get("retry")
    if retry_block is not None and not isinstance(retry_block, dict):  # LlmCallAction validated it
        raise TypeError(f"an llm.call's retry is not an object: {retry_block!r}")
    call = Call(id=call_id, kind="llm_call", anchor=anchor, turn_id=turn_id, order=state.tick(),
                handler="worker" if worker or provider == "worker" else "engine", request=request,
                retry=retry_block, started_at=now)
    state.put(call)
    state.emit("call.started", call_id=call_id, kind="llm_call", anchor=anchor)
    if rules.llm_call_parked(state, call):
        rules.void_call(state, call, "parked")
    elif call.handler == "worker":
        enqueue_llm_execute(state, call)
    return call


def enqueue_llm_execute(state: SessionState, call: Call) -> None:
    trigger = {"type": "llm.execute", "id": call.id, "request": call.request or {},
               "stream": bool((call.request or {}).get("stream")),
               "attempt": call.attempt}
    state.enqueue(trigger, anchor=call.anchor, turn_id=call.turn_id, key=("llm.execute", call.id, call.attempt),
                  call_id=call.id)


def apply_llm_result(state: SessionState, call: Call, result: LlmOutcome, now: float) -> None:
    """Record an LLM reply at its anchor; a call voided meanwhile is discarded unrecorded (R6)."""
    if call.status != "open":
        return
    if rules.llm_call_parked(state, call):
        rules.void_call(state, call, "parked")
        return
    policy = retry.policy(state.header.agent, "llm", call.retry)
    if not result.get("ok") and result.get("retryable") and call.attempt < policy.max_attempts \
            and now - (call.started_at or now) < policy.total_timeout_secs:
        delay = policy.backoff(call.attempt)
        call.attempt += 1
        call.not_before = now + delay
        state.touch(call)
        state.emit("call.retry", call_id=call.id, attempt=call.attempt, error=result.get("error"))
        state.schedule(delay, f"llm/{call.id}/{call.attempt}")
        if call.handler == "worker":
            enqueue_llm_execute(state, call)
        return
    if not result.get("ok") and result.get("retryable"):
        # Retries spent: a terminal failure, named as such for the worker.
        result = llm_failure({"message": f"LLM call failed after {call.attempt} attempt(s)",
                              "last_error": result.get("error"), "last_code": result.get("code")}, "deadline_exceeded")
    call.status = "settled"
    call.ok = bool(result.get("ok"))
    call.usage = result.get("usage")
    trigger: JsonObject = {"type": "llm.finished", "id": call.id, "ok": call.ok,
                               "truncated": bool(result.get("truncated"))}
    anchor = call.anchor
    if call.ok:
        node_id = derive("msg", state.header.session_id, "llm", call.id)
        message = {k: v for k, v in (result.get("message") or {}).items() if v is not None and k != "id"}
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
    cost = result.get("cost")
    if cost:
        usage["cost"] = round(usage.get("cost", 0) + float(cost), 10)
    state.touch(call)
    state.emit("call.settled", call_id=call.id, kind="llm_call", ok=call.ok, usage=call.usage,
               cost=result.get("cost"))
    state.enqueue(trigger, anchor=anchor, turn_id=call.turn_id, key=("llm.finished", call.id), call_id=call.id)
