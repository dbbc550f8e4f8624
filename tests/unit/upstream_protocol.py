"""The parts of the upstream worker protocol (docs/PROTOCOL.md, its introduction) the conformance
tests check against.

Written by hand from a reading of upstream's published JSON Schema (not a copy): it encodes the
definitions `DecisionRequest`, `SessionOwner`, `DecisionTrigger`, `ToolInput`, `LlmRequest`,
`LlmTool`, `ErrorCode`, `DecisionProposal`, `DecisionAction`, `Effect`, `EffectStatus`,
`ToolHandler`, `LlmHandler`, `MessageTree`, `Node`, `Control`, `ControlKind`, `InterruptOrigin`,
`Message`, `DraftMessage`, `ToolCall` and `Role`: their required fields, types and enums. Like
upstream, objects are open (extra fields are allowed), so Holdpoint's additions pass and a changed
type does not. `agent` is checked as an object or null only (see docs/PROTOCOL.md §2.2).
"""

from __future__ import annotations

from typing import Any

STR, INT, BOOL = {"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "boolean"}
STR_OR_NULL = {"type": ["string", "null"]}


def obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": props}


def tagged(tag: str, value: str, required: list[str], **props: Any) -> dict[str, Any]:
    return obj([tag, *required], **{tag: {"const": value}}, **props)


REF = lambda name: {"$ref": f"#/$defs/{name}"}  # noqa: E731
NULLABLE = lambda name: {"anyOf": [REF(name), {"type": "null"}]}  # noqa: E731

DEFS: dict[str, Any] = {
    "Role": {"enum": ["system", "user", "assistant", "tool"]},
    "ToolCall": obj(["id", "type", "function"], id=STR, type=STR,
                    function=obj(["name", "arguments"], name=STR, arguments=STR)),
    "Content": {"anyOf": [STR, {"type": "array", "items": obj(["type"], type=STR)}, {"type": "null"}]},
    "Message": obj(["id", "role"], id=STR, role=REF("Role"), content=REF("Content"), name=STR_OR_NULL,
                   tool_call_id=STR_OR_NULL, tool_calls={"type": ["array", "null"], "items": REF("ToolCall")}),
    "DraftMessage": obj(["role"], id=STR_OR_NULL, role=REF("Role"), content=REF("Content"), name=STR_OR_NULL,
                        tool_call_id=STR_OR_NULL, tool_calls={"type": ["array", "null"], "items": REF("ToolCall")}),
    "SessionOwner": obj(["tenant_id"], tenant_id=STR, id=STR_OR_NULL,
                        metadata={"type": "object", "additionalProperties": STR}),
    "ErrorCode": {"enum": ["provider_error", "rate_limited", "refused", "budget_exceeded", "deadline_exceeded"]},
    "ToolHandler": {"enum": ["worker", "client"]},
    "LlmHandler": {"enum": ["server", "worker"]},
    "EffectStatus": {"enum": ["pending", "completed", "failed", "retry_scheduled", "queued"]},
    "InterruptOrigin": {"enum": ["system", "machine", "frontend"]},
    "ToolInput": {"oneOf": [
        tagged("status", "valid", ["value"]),
        tagged("status", "invalid", ["value", "error"], error=STR),
        tagged("status", "malformed", ["error"], error=STR)]},
    "LlmTool": obj(["name", "description"], name=STR, description=STR),
    "LlmRequest": obj(["model", "messages"], model=STR, messages={"type": "array", "items": REF("DraftMessage")},
                      tools={"type": ["array", "null"], "items": REF("LlmTool")},
                      temperature={"type": ["number", "null"]},
                      max_completion_tokens={"type": ["integer", "null"], "minimum": 0}),
    "DecisionTrigger": {"oneOf": [
        tagged("type", "session.start", []),
        tagged("type", "client.messages", ["messages"], messages={"type": "array", "items": REF("DraftMessage")},
               new_from=INT),
        tagged("type", "client.action", ["name"], name=STR),
        tagged("type", "tool.execute", ["id", "name", "arguments", "input", "attempt"], id=STR, name=STR,
               arguments=STR, input=REF("ToolInput"), attempt=INT, deadline=STR_OR_NULL),
        tagged("type", "tool.finished", ["id", "ok", "name"], id=STR, ok=BOOL, name=STR, result=STR_OR_NULL,
               error=STR_OR_NULL),
        tagged("type", "llm.execute", ["id", "request", "attempt"], id=STR, request=REF("LlmRequest"),
               attempt=INT, stream=BOOL, deadline=STR_OR_NULL),
        tagged("type", "llm.finished", ["id", "ok"], id=STR, ok=BOOL, error=STR_OR_NULL, truncated=BOOL,
               code=NULLABLE("ErrorCode"), message=NULLABLE("DraftMessage"),
               cost={"type": ["string", "number", "null"]}),
        tagged("type", "sub_agent.finished", ["id", "ok", "session_id", "agent_id"], id=STR, ok=BOOL,
               session_id=STR, agent_id=STR, result=STR_OR_NULL, error=STR_OR_NULL),
        tagged("type", "interrupt.resumed", ["interrupt_id"], interrupt_id=STR)]},
    "DecisionAction": {"oneOf": [
        tagged("type", "llm.call", [], handler=REF("LlmHandler"), id=STR_OR_NULL, model=STR_OR_NULL,
               messages={"type": ["array", "null"], "items": REF("DraftMessage")}),
        tagged("type", "tool.call", ["name", "arguments"], name=STR, id=STR_OR_NULL, handler=REF("ToolHandler")),
        tagged("type", "tool.result", ["result"], id=STR_OR_NULL, attempt={"type": ["integer", "null"]}),
        tagged("type", "llm.result", ["response"], response=obj(["model"], model=STR), id=STR_OR_NULL),
        tagged("type", "tool.error", ["error"], error=STR, code=NULLABLE("ErrorCode"), retryable=BOOL,
               id=STR_OR_NULL),
        tagged("type", "llm.error", ["error"], error=STR, code=NULLABLE("ErrorCode"), retryable=BOOL,
               id=STR_OR_NULL),
        tagged("type", "sub_agent.spawn", ["session_id", "agent_id", "tool_call_id"], session_id=STR,
               agent_id=STR, tool_call_id=STR),
        tagged("type", "message.send", ["session_id", "message"], session_id=STR, message=REF("DraftMessage")),
        tagged("type", "interrupt", ["reason"], reason=STR, interrupt_id=STR_OR_NULL),
        tagged("type", "done", [])]},
    "DecisionProposal": obj(["messages", "actions"], messages={"type": "array", "items": REF("DraftMessage")},
                            actions={"type": "array", "items": REF("DecisionAction")}),
    "Effect": {"allOf": [
        obj(["id", "status", "attempt"], id=STR, status=REF("EffectStatus"), attempt=INT, anchor=STR_OR_NULL,
            deadline=STR_OR_NULL),
        {"oneOf": [
            tagged("kind", "tool_call", ["name", "arguments", "handler"], name=STR, arguments=STR,
                   handler=REF("ToolHandler")),
            tagged("kind", "sub_agent", ["agent_id", "session_id"], agent_id=STR, session_id=STR),
            tagged("kind", "llm_call", ["handler", "stream"], handler=REF("LlmHandler"), stream=BOOL)]}]},
    "Control": obj(["id", "interrupt_id", "kind", "origin"], id=STR, interrupt_id=STR,
                   kind={"enum": ["interrupt", "resume"]}, origin=REF("InterruptOrigin"), reason=STR),
    "Node": {"oneOf": [
        tagged("kind", "message", ["message"], message=REF("Message"), parent_id=STR_OR_NULL),
        tagged("kind", "control", ["control"], control=REF("Control"), parent_id=STR_OR_NULL)]},
    "MessageTree": obj([], head_id=STR_OR_NULL, nodes={"type": "array", "items": REF("Node")}),
    "DecisionRequest": obj(
        ["session_id", "decision_id", "agent_id", "identity", "trigger", "state", "calls", "pending_calls",
         "messages", "message_tree", "ancestry", "attempts"],
        session_id=STR, decision_id=STR, agent_id=STR, identity=REF("SessionOwner"), trigger=REF("DecisionTrigger"),
        proposed=NULLABLE("DecisionProposal"), agent={"type": ["object", "null"]},
        calls={"type": "array", "items": REF("Effect")}, pending_calls=INT,
        messages={"type": "array", "items": REF("Message")}, message_tree=REF("MessageTree"),
        ancestry={"type": "array", "items": STR}, attempts=INT, deadline=STR_OR_NULL, turn_id=STR_OR_NULL),
    "DecisionResponse": obj([], actions={"type": "array", "items": REF("DecisionAction")},
                            messages={"type": "array", "items": REF("DraftMessage")},
                            agent={"type": ["object", "null"]}),
}


def schema(definition: str) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": f"#/$defs/{definition}",
            "$defs": DEFS}
