"""The decision request as the worker sees it (PROTOCOL.md §2.2): the session's records projected
onto the wire models of `protocols/worker.py`, which follow the upstream Substructure protocol.

The store keeps triggers as they were recorded; this module materializes them at delivery time
(paths, LLM requests, string results), so stored decisions never grow with the tree and old
records are sent in today's shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from holdpoint.core import approvals
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.protocols import worker as p
from holdpoint.core.state import Call, Decision, Interrupt, SessionState, derive, iso
from holdpoint.core.tree import Node

if TYPE_CHECKING:
    from holdpoint.core.agent_config import AgentConfig

# Holdpoint's origins by privilege (interrupts.ORIGIN_RANK) onto upstream's three levels.
UPSTREAM_ORIGIN: dict[str, p.InterruptOrigin] = {
    "worker": "frontend", "client": "frontend", "machine": "machine", "operator": "system", "system": "system"}

# Provider and worker error codes onto upstream's `ErrorCode`.
UPSTREAM_CODE: dict[str, p.ErrorCode] = {
    "throttled": "rate_limited", "rate_limit": "rate_limited", "timeout": "deadline_exceeded",
    "content_filtered": "refused", "access_denied": "refused"}


def text_and_value(value: JsonValue) -> tuple[str | None, JsonValue]:
    """A result or error as upstream types it (a string or null; any other JSON value as its JSON
    text), and the value itself when it was not a string (Holdpoint's `*_value` addition)."""
    if value is None or isinstance(value, str):
        return value, None
    return json.dumps(value, separators=(",", ":")), value


def upstream_code(code: Any) -> tuple[p.ErrorCode | None, str | None]:
    """(`code`, `provider_code`): an upstream code as it is, any other mapped and kept aside."""
    if code is None:
        return None, None
    if code in p.ERROR_CODES:
        return code, None
    return UPSTREAM_CODE.get(str(code), "provider_error"), str(code)


# --- triggers -----------------------------------------------------------------------------


def _messages(nodes: list[Node]) -> list[p.WireMessage]:
    return [p.WireMessage.model_validate(n.message) for n in nodes]


def _client_messages(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    # Stored without the path (a step's writes must not grow with the tree); the path is the
    # branch the turn started on, root to the decision's anchor.
    out = p.ClientMessages(messages=_messages(state.tree.path(decision.anchor)), new_from=t.get("new_from", 0))
    if isinstance(client := t.get("client"), dict):  # recorded from the input, an object or absent
        out.client = client
    return out


def _client_action(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    out = p.ClientAction(name=t["name"])
    if "args" in t:
        out.args = t["args"]
    return out


def _tool_execute(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    out = p.ToolExecute(id=t["id"], name=t["name"], arguments=t["arguments"],
                        input=p.ToolInput.model_validate(t["input"]), attempt=t["attempt"])
    if isinstance(deadline := t.get("deadline"), str):  # recorded as an ISO time, or None
        out.deadline = deadline
    return out


def _outcome_fields(t: JsonObject) -> JsonObject:
    """`result` or `error` as strings, with the structured value beside them when there was one."""
    fields: JsonObject = {}
    for key in ("result", "error"):
        if key in t:
            text, value = text_and_value(t[key])
            fields[key] = text
            if value is not None:
                fields[f"{key}_value"] = value
    return fields


def _tool_finished(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    return p.ToolFinished(id=t["id"], ok=t["ok"], name=t.get("name") or "", **_outcome_fields(t))


def _sub_agent_finished(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    return p.SubAgentFinished(id=t["id"], ok=t["ok"], session_id=t.get("session_id") or "",
                              agent_id=t.get("agent_id") or "", **_outcome_fields(t))


def llm_tools(agent: AgentConfig) -> list[p.LlmTool]:
    """The config's tools and sub-agents as upstream `LlmTool`s (a sub-agent takes a `message`)."""
    out = [p.LlmTool(name=t.name, description=t.description or "", input=t.input) for t in agent.tools]
    out += [p.LlmTool(name=spec.name, description=spec.description or "",
                      input={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})
            for spec in agent.sub_agents or []]
    return out


def llm_request(state: SessionState, anchor: str | None, issued: JsonObject) -> p.LlmRequest:
    """An `llm.call` as the worker's model should see it: omitted fields from the config in force,
    `messages` omitted means the agent's `system` prompt and the path to the call's anchor."""
    agent = state.header.config()
    model = issued.get("model") or agent.model or (agent.llm.extra("model") if agent.llm else None) or ""
    messages = issued.get("messages")
    if messages is None:
        path: list[JsonValue] = [n.message for n in state.tree.path(anchor)]
        messages = [{"role": "system", "content": agent.system}, *path] if agent.system else path
    extra = {k: v for k, v in issued.items() if k not in ("type", "model", "messages", "tools")}
    tools = issued.get("tools")
    return p.LlmRequest(model=str(model), messages=messages,
                        tools=llm_tools(agent) if tools is None else tools, **extra)


def _llm_execute(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    request = t.get("request")
    issued = request if isinstance(request, dict) else {}  # recorded as an object, or absent
    return p.LlmExecute(id=t["id"], request=llm_request(state, decision.anchor, issued),
                        stream=bool(t.get("stream")), attempt=t["attempt"])


def _llm_finished(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    out = p.LlmFinished(id=t["id"], ok=t["ok"], truncated=bool(t.get("truncated")))
    for key in ("message", "usage", "cost"):
        if t.get(key) is not None:
            setattr(out, key, t[key])
    if not t["ok"]:
        out.error, value = text_and_value(t.get("error"))
        if value is not None:
            out.error_value = value
        out.code, provider_code = upstream_code(t.get("code"))
        if provider_code is not None:
            out.provider_code = provider_code
    return out


RESUMED_KEYS = ("payload", "verdict", "responder", "channel", "expired", "approvals", "receipt", "edit")
"""What an `interrupt.resumed` carries beside its id (`approvals.resumed`), as a kept copy stores it."""


def resumed_fields(state: SessionState, t: JsonObject) -> JsonObject:
    """The answer an `interrupt.resumed` delivers and how it was decided: from the interrupt, for
    the generation the trigger names (a record stored with its own copy keeps that copy; one kept
    before the outcome was, only its payload)."""
    if "payload" in t:
        return {k: t[k] for k in RESUMED_KEYS if k in t}
    named = t["interrupt_id"]
    interrupt = state.interrupts.get(named) if isinstance(named, str) else None
    if interrupt is None or interrupt.generation != t.get("generation", interrupt.generation):
        return {"payload": None}
    return approvals.resumed(interrupt)


def _interrupt_resumed(state: SessionState, decision: Decision, t: JsonObject) -> p.Out:
    return p.InterruptResumed(interrupt_id=t["interrupt_id"], **resumed_fields(state, t))


TRIGGERS: dict[str, Callable[[SessionState, Decision, JsonObject], p.Out]] = {
    "session.start": lambda state, decision, t: p.SessionStart(),
    "client.messages": _client_messages,
    "client.action": _client_action,
    "tool.execute": _tool_execute,
    "tool.finished": _tool_finished,
    "llm.execute": _llm_execute,
    "llm.finished": _llm_finished,
    "sub_agent.finished": _sub_agent_finished,
    "interrupt.resumed": _interrupt_resumed,
    "turn.finished": lambda state, decision, t: p.TurnFinished(),
}


def trigger(state: SessionState, decision: Decision) -> p.Out:
    t = decision.trigger
    return TRIGGERS[t["type"]](state, decision, t)


# --- calls ----------------------------------------------------------------------------------


class _Effect(TypedDict):
    """What every call's `Effect` carries."""

    id: str
    status: p.EffectStatus
    attempt: int
    anchor: NotRequired[str]
    deadline: NotRequired[str]


def call_view(state: SessionState, call: Call) -> p.Out:
    """An open call as an upstream `Effect`: `pending`, or `retry_scheduled` while it backs off."""
    status: p.EffectStatus = "retry_scheduled" if (call.not_before or 0) > state.now else "pending"
    common: _Effect = {"id": call.id, "status": status, "attempt": call.attempt}
    if call.anchor is not None:
        common["anchor"] = call.anchor
    if call.deadline_at is not None:
        common["deadline"] = iso(call.deadline_at)
    if call.kind == "tool_call":
        return p.ToolCallView(name=call.name or "", arguments=call.arguments or "{}",
                              handler="client" if call.handler == "client" else "worker", **common)
    if call.kind == "sub_agent":
        return p.SubAgentView(agent_id=call.name or "", session_id=call.child_session_id or "", name=call.name,
                              **common)
    return p.LlmCallView(handler="worker" if call.handler == "worker" else "server",
                         stream=bool((call.request or {}).get("stream")), **common)


# --- the tree ---------------------------------------------------------------------------------


def _controls(interrupt: Interrupt) -> list[p.ControlNode]:
    """An interrupt's markers: `interrupt` at its anchor, `resume` below it once it is cleared."""
    raised_id = derive("ctl", interrupt.interrupt_id, interrupt.generation, "interrupt")
    raised = p.Control(id=raised_id, interrupt_id=interrupt.interrupt_id, kind="interrupt",
                       origin=UPSTREAM_ORIGIN.get(interrupt.origin, "system"), reason=interrupt.reason,
                       payload=interrupt.payload, holdpoint_origin=interrupt.origin)
    out = [p.ControlNode(control=raised, parent_id=interrupt.anchor)]
    if interrupt.status != "open":
        origin = interrupt.responder.origin if interrupt.responder else "system"
        resumed = p.Control(id=derive("ctl", interrupt.interrupt_id, interrupt.generation, "resume"),
                            interrupt_id=interrupt.interrupt_id, kind="resume",
                            origin=UPSTREAM_ORIGIN.get(origin, "system"),
                            reason="expired" if interrupt.status == "expired" else "",
                            payload=interrupt.resolution, holdpoint_origin=origin)
        out.append(p.ControlNode(control=resumed, parent_id=raised_id))
    return out


def message_tree(state: SessionState) -> p.MessageTree:
    """Message nodes in creation order, then the control nodes of interrupts in the order raised.
    Control nodes hang off the tree (nothing is parented on them), so `head_id` and every message
    path are what they would be without them, and they never reach an LLM prompt."""
    nodes: list[p.MessageNode | p.ControlNode] = []
    for node in sorted(state.tree.nodes.values(), key=lambda n: n.order):
        wire_node = p.MessageNode(message=p.WireMessage.model_validate(node.message))
        if node.parent_id is not None:
            wire_node.parent_id = node.parent_id
        nodes.append(wire_node)
    for interrupt in sorted(state.interrupts.values(), key=lambda i: (i.created_at, i.interrupt_id)):
        nodes.extend(_controls(interrupt))
    return p.MessageTree(nodes=nodes, head_id=state.tree.head_id)


def owner(state: SessionState) -> p.SessionOwner:
    identity = state.header.identity or {}
    out = p.SessionOwner(tenant_id=state.header.tenant,
                         metadata={str(k): str(v) for k, v in (identity.get("metadata") or {}).items()})
    if identity.get("id") is not None:
        out.id = str(identity["id"])
    return out
