"""The engine's proposed continuation for each trigger (PROTOCOL.md §4, "Engine proposals")."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from holdpoint.core.state import Call, Decision, SessionState

FOLLOW_ONS = frozenset({"tool.finished", "llm.finished", "sub_agent.finished"})


def tool_spec(state: SessionState, name: str) -> dict[str, Any] | None:
    for tool in (state.header.agent or {}).get("tools") or []:
        if tool.get("name") == name:
            return tool
    return None


def check_arguments(state: SessionState, name: str, arguments: str) -> dict[str, Any]:
    """`input` of a tool.execute trigger: valid, invalid (schema) or malformed (not JSON)."""
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError) as exc:
        return {"status": "malformed", "error": f"arguments are not JSON: {exc}"}
    spec = tool_spec(state, name)
    if spec is None:
        return {"status": "invalid", "value": value, "error": f"tool {name!r} is not declared"}
    schema = spec.get("input")
    if schema:
        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as exc:
            return {"status": "invalid", "value": value, "error": exc.message}
    return {"status": "valid", "value": value}


def _siblings_open(state: SessionState, call: Call | None) -> bool:
    if call is None:
        return any(c.status == "open" for c in state.calls.values())
    return any(
        c.status == "open" and c.id != call.id and c.group == call.group and c.kind in ("tool_call", "sub_agent")
        for c in state.calls.values()
    )


def _sibling_finish_queued(state: SessionState, decision: Decision, call: Call | None) -> bool:
    """Another sibling's tool.finished still waits behind this one: let it re-prompt."""
    if call is None:
        return False
    for other in state.pending_decisions():
        if other.id == decision.id or other.trigger.get("type") not in ("tool.finished", "sub_agent.finished"):
            continue
        sibling = state.calls.get(other.call_id or "")
        if sibling is not None and sibling.group == call.group:
            return True
    return False


def task_message(arguments: str) -> dict[str, Any]:
    """What the model asked a sub-agent, as the child's first user message."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        args = arguments
    if isinstance(args, dict):
        text = args.get("message") or args.get("task") or args.get("input") or json.dumps(args)
    else:
        text = str(args)
    return {"role": "user", "content": str(text)}


def _call_action(state: SessionState, tc: dict[str, Any]) -> dict[str, Any]:
    """A model tool call becomes a `tool.call`, or a `sub_agent.spawn` for a declared sub-agent."""
    name = tc["function"]["name"]
    arguments = tc["function"].get("arguments") or "{}"
    for spec in (state.header.agent or {}).get("sub_agents") or []:
        if spec.get("name") == name:
            return {"type": "sub_agent.spawn", "agent_id": spec["agent_id"], "tool_call_id": tc["id"],
                    "message": task_message(arguments)}
    return {"type": "tool.call", "id": tc["id"], "name": name, "arguments": arguments}


def propose(state: SessionState, decision: Decision) -> dict[str, Any]:
    trigger = decision.trigger
    kind = trigger.get("type")
    if kind == "session.start":
        return {"agent": state.header.agent or {}}
    if kind == "client.messages":
        return {"actions": [{"type": "llm.call"}]}
    if kind == "client.action":
        return {"actions": [{"type": "done"}]}  # only the worker knows what an action means
    if kind == "llm.execute":
        return {}  # only the worker can run its own model
    if kind == "llm.finished":
        if not trigger.get("ok"):
            return {"actions": [{"type": "fail", "error": trigger.get("error") or "llm call failed"}]}
        tool_calls = (trigger.get("message") or {}).get("tool_calls") or []
        if tool_calls:
            return {"actions": [_call_action(state, tc) for tc in tool_calls]}
        return {"actions": [{"type": "done"}]}
    if kind == "tool.execute":
        status = (trigger.get("input") or {}).get("status")
        if status != "valid":
            error = (trigger.get("input") or {}).get("error") or "invalid arguments"
            return {"actions": [{"type": "tool.error", "id": trigger["id"], "error": error, "code": "invalid_input"}]}
        return {}
    if kind in ("tool.finished", "sub_agent.finished"):
        call = state.calls.get(decision.call_id or "")
        if _siblings_open(state, call) or _sibling_finish_queued(state, decision, call):
            return {}
        return {"actions": [{"type": "llm.call"}]}
    if kind == "interrupt.resumed":
        interrupt = state.interrupts.get(trigger.get("interrupt_id", ""))
        if interrupt is not None and interrupt.turn_id is None:
            return {}  # raised while no turn ran (e.g. by an operator): nothing to continue
        bound = state.calls.get(interrupt.call_id or "") if interrupt else None
        if bound is not None and bound.status == "open":
            return {}
        if any(c.status == "open" for c in state.calls.values()):
            return {}
        if any(d.id != decision.id and d.trigger.get("type") in FOLLOW_ONS for d in state.pending_decisions()):
            return {}  # a held follow-on delivered next re-prompts instead
        return {"actions": [{"type": "llm.call"}]}
    if kind == "turn.finished":
        return {"actions": [{"type": "done"}]}
    return {}
