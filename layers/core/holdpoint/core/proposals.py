"""The engine's proposed continuation for each trigger (PROTOCOL.md §4, "Engine proposals")."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from holdpoint.core import schemas
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Call, Decision, SessionState, derive

if TYPE_CHECKING:
    from holdpoint.core.agent_config import ToolSpec

FOLLOW_ONS = frozenset({"tool.finished", "llm.finished", "sub_agent.finished"})


def tool_spec(state: SessionState, name: str) -> ToolSpec | None:
    """The declared tool of that name in the config in force."""
    return next((tool for tool in state.header.config().tools if tool.name == name), None)


class ArgumentsCheck(TypedDict):
    """A tool.execute trigger's `input`: the arguments parsed (`value`) and how they fared."""

    status: Literal["valid", "invalid", "malformed"]
    value: NotRequired[Any]
    """The arguments as the model sent them, parsed: any JSON (`json.loads`)."""
    error: NotRequired[str]


def check_arguments(state: SessionState, name: str, arguments: str) -> ArgumentsCheck:
    """`input` of a tool.execute trigger: valid, invalid (schema) or malformed (not JSON)."""
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError) as exc:
        return {"status": "malformed", "error": f"arguments are not JSON: {exc}"}
    spec = tool_spec(state, name)
    if spec is None:
        return {"status": "invalid", "value": value, "error": f"tool {name!r} is not declared"}
    schema = spec.input
    failure = schemas.evaluate(schema, value) if schema else None
    if failure is not None:
        error = failure.message if failure.judged else f"the input schema of tool {name!r} {failure.message}"
        return {"status": "invalid", "value": value, "error": error}
    return {"status": "valid", "value": value}


def checked_json(check: ArgumentsCheck) -> JsonObject:
    """The check as the trigger's JSON object: its fields in the order `check_arguments` wrote them."""
    out: JsonObject = {"status": check["status"]}
    if "value" in check:
        out["value"] = check["value"]
    if "error" in check:
        out["error"] = check["error"]
    return out


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


def task_message(arguments: str) -> JsonObject:
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


def _call_action(state: SessionState, tc: JsonObject) -> JsonObject:
    """A model tool call becomes a `tool.call`, or a `sub_agent.spawn` for a declared sub-agent."""
    function = tc["function"]
    if not isinstance(function, dict):  # an LLM reply's tool call, checked when it was recorded
        raise TypeError("a tool call names its function")
    name = function["name"]
    arguments = function.get("arguments") or "{}"
    for spec in state.header.config().sub_agents or []:
        if spec.name == name:
            h = state.header
            return {"type": "sub_agent.spawn", "session_id": derive("ses", h.tenant, h.session_id, tc["id"]),
                    "agent_id": spec.agent_id, "tool_call_id": tc["id"], "message": task_message(str(arguments))}
    return {"type": "tool.call", "id": tc["id"], "name": name, "arguments": arguments}


def _after_llm(state: SessionState, decision: Decision) -> JsonObject:
    trigger = decision.trigger
    if not trigger.get("ok"):
        return {"actions": [{"type": "fail", "error": trigger.get("error") or "llm call failed"}]}
    tool_calls = (trigger.get("message") or {}).get("tool_calls") or []
    if tool_calls:
        return {"actions": [_call_action(state, tc) for tc in tool_calls]}
    return {"actions": [{"type": "done"}]}


def _execute(state: SessionState, decision: Decision) -> JsonObject:
    """Only the worker runs a tool; arguments that failed their checks get a ready `tool.error`."""
    trigger = decision.trigger
    status = (trigger.get("input") or {}).get("status")
    if status != "valid":
        error = (trigger.get("input") or {}).get("error") or "invalid arguments"
        return {"actions": [{"type": "tool.error", "id": trigger["id"], "error": error,
                             "detail": {"code": "invalid_input"}}]}
    return {}


def _after_call(state: SessionState, decision: Decision) -> JsonObject:
    """Re-prompt once, when the last sibling call of one model reply has settled."""
    call = state.calls.get(decision.call_id or "")
    if _siblings_open(state, call) or _sibling_finish_queued(state, decision, call):
        return {}
    return {"actions": [{"type": "llm.call"}]}


def _after_resume(state: SessionState, decision: Decision) -> JsonObject:
    interrupt = state.interrupts.get(decision.trigger.get("interrupt_id", ""))
    if interrupt is not None and interrupt.turn_id is None:
        return {}  # raised while no turn ran (e.g. by an operator): nothing to continue
    bound = state.calls.get(interrupt.call_id or "") if interrupt else None
    if bound is not None and bound.status == "open":
        return {}  # only the worker can settle the call the interrupt was raised for
    if any(c.status == "open" for c in state.calls.values()):
        return {}
    if any(d.id != decision.id and d.trigger.get("type") in FOLLOW_ONS for d in state.pending_decisions()):
        return {}  # a held follow-on delivered next re-prompts instead
    return {"actions": [{"type": "llm.call"}]}


def _agent_item(state: SessionState) -> JsonObject:
    """The config in force as the worker sees it (an empty object when there is none)."""
    agent = state.header.agent
    return agent.to_item() if agent is not None else {}


def _constant(proposal: JsonObject) -> Callable[[SessionState, Decision], JsonObject]:
    return lambda state, decision: proposal


PROPOSALS: dict[str, Callable[[SessionState, Decision], JsonObject]] = {
    "session.start": lambda state, decision: {"agent": _agent_item(state)},
    "client.messages": _constant({"actions": [{"type": "llm.call"}]}),
    "client.action": _constant({"actions": [{"type": "done"}]}),  # only the worker knows what it means
    "llm.execute": _constant({}),  # only the worker can run its own model
    "llm.finished": _after_llm,
    "tool.execute": _execute,
    "tool.finished": _after_call,
    "sub_agent.finished": _after_call,
    "interrupt.resumed": _after_resume,
    "turn.finished": _constant({"actions": [{"type": "done"}]}),
}


def propose(state: SessionState, decision: Decision) -> JsonObject:
    """What the engine would do next for this decision's trigger (PROTOCOL.md §4.3)."""
    rule = PROPOSALS.get(decision.trigger.get("type") or "")
    return rule(state, decision) if rule is not None else {}
