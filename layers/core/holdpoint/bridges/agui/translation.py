"""The AG-UI channel's translations (PROTOCOL.md §7): `RunAgentInput` in (its models are
`models`), AG-UI events out. A thread is a session, a run a turn, an AG-UI interrupt a
Holdpoint interrupt. Pure: the services feed it loaded state. The WebSocket's `ag-ui` frames,
built on it, are `live`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from holdpoint.core import schemas
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.state import Interrupt, SessionState, Turn

if TYPE_CHECKING:
    from holdpoint.bridges.agui.models import Message, ResumeEntry


def _obj(value: JsonValue) -> JsonObject:
    """A member of a record Holdpoint wrote (a message's tool call, an event's `data`) as the object
    it was recorded as; an absent one is empty."""
    return value if isinstance(value, dict) else {}


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


# --- in --------------------------------------------------------------------------------


def message_in(message: Message) -> JsonObject | None:
    """An AG-UI message as a Holdpoint message (None for the client's own `activity`/`reasoning`)."""
    if message.role in ("activity", "reasoning"):
        return None
    out: JsonObject = {"id": message.id, "role": "system" if message.role == "developer" else message.role}
    if message.content is not None:
        content = message.content
        out["content"] = content if isinstance(content, str) else [*content] if isinstance(content, list) else (
            json.dumps(content))
    if message.toolCalls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.function.name, "arguments": c.function.arguments}}
                             for c in message.toolCalls]
    if message.toolCallId is not None:
        out["tool_call_id"] = message.toolCallId
    if message.name is not None:
        out["name"] = message.name
    return out


def messages_in(messages: list[Message]) -> list[JsonObject]:
    return [m for m in (message_in(x) for x in messages) if m is not None]


def resume_payload(entry: ResumeEntry) -> JsonObject:
    """The resume payload in the AG-UI shape the resume path understands: `{status, payload}`."""
    out: JsonObject = {"status": entry.status}
    if entry.payload is not None:
        out["payload"] = entry.payload
    return out


# --- out -------------------------------------------------------------------------------


def text(content: object) -> str:
    """Message content as AG-UI's string: text parts joined, any other JSON as its text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return json.dumps(content)


def message_out(message: JsonObject) -> JsonObject:
    """A recorded message as an AG-UI message (MESSAGES_SNAPSHOT)."""
    role = message.get("role")
    out: JsonObject = {"id": message["id"], "role": role}
    if role == "tool":
        out["content"] = text(message.get("content"))
        out["toolCallId"] = message.get("tool_call_id") or ""
        return out
    if role == "user" and isinstance(message.get("content"), list):
        out["content"] = message["content"]
    elif role != "assistant" or message.get("content") is not None:
        out["content"] = text(message.get("content"))
    if role == "assistant" and message.get("tool_calls"):
        out["toolCalls"] = [{"id": c["id"], "type": "function", "function": {
            "name": _obj(c["function"])["name"], "arguments": _obj(c["function"]).get("arguments") or "{}"}}
            for c in map(_obj, _list(message["tool_calls"]))]
    if message.get("name"):
        out["name"] = message["name"]
    return out


def message_events(message: JsonObject) -> list[JsonObject]:
    """The events that stream a recorded message: an assistant's text and tool calls, a tool's
    result. User and system messages come from the client, so they are not echoed."""
    role, mid = message.get("role"), message["id"]
    out: list[JsonObject] = []
    if role == "assistant":
        body = text(message.get("content"))
        if body:
            out += [{"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": body},
                    {"type": "TEXT_MESSAGE_END", "messageId": mid}]
        for call in map(_obj, _list(message.get("tool_calls"))):
            function = _obj(call["function"])
            out += [{"type": "TOOL_CALL_START", "toolCallId": call["id"], "toolCallName": function["name"],
                     "parentMessageId": mid},
                    {"type": "TOOL_CALL_ARGS", "toolCallId": call["id"],
                     "delta": function.get("arguments") or "{}"},
                    {"type": "TOOL_CALL_END", "toolCallId": call["id"]}]
    elif role == "tool" and message.get("tool_call_id"):
        out.append({"type": "TOOL_CALL_RESULT", "messageId": mid, "toolCallId": message["tool_call_id"],
                    "content": text(message.get("content")), "role": "tool"})
    return out


def events_out(state: SessionState, known: set[str]) -> list[JsonObject]:
    """AG-UI events for the messages on the active path not in `known` (ids), in path order; adds
    them to `known`. Read off the tree rather than the event log: a tool result is recorded
    without a `message.added` event."""
    out: list[JsonObject] = []
    for node in state.tree.active_path():
        if node.id not in known:
            known.add(node.id)
            out += message_events(node.message)
    return out


def interrupt_out(interrupt: Interrupt) -> JsonObject:
    """A Holdpoint interrupt as an AG-UI interrupt: id, reason, `responseSchema` if it has one,
    `expiresAt` if it expires, `toolCallId` if bound to a call, the rest in `metadata`."""
    out: JsonObject = {"id": interrupt.interrupt_id, "reason": interrupt.reason}
    payload = interrupt.payload
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        out["message"] = payload["message"]
    if interrupt.call_id is not None:
        out["toolCallId"] = interrupt.call_id
    schema = schemas.declared(interrupt.response_schema, payload)
    if isinstance(schema, dict):
        out["responseSchema"] = schema
    if interrupt.expires_at is not None:
        out["expiresAt"] = interrupt.expires_at
    view = interrupt.view()
    out["metadata"] = {k: view[k] for k in ("origin", "payload", "created_at", "anchor", "action") if k in view}
    return out


def snapshot(state: SessionState) -> JsonObject:
    return {"type": "MESSAGES_SNAPSHOT", "messages": [message_out(n.message) for n in state.tree.active_path()]}


def started(thread_id: str, run_id: str) -> JsonObject:
    return {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}


def parked(thread_id: str, run_id: str, interrupts: list[Interrupt]) -> JsonObject:
    return {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
            "outcome": {"type": "interrupt", "interrupts": [interrupt_out(i) for i in interrupts]}}


def ended(thread_id: str, run_id: str, turn: Turn | None) -> JsonObject:
    """RUN_FINISHED (success, with the turn's `done` data as `result`) or RUN_ERROR (a failed turn)."""
    if turn is not None and turn.status == "failed":
        error = turn.error
        message = error.get("message") if isinstance(error, dict) else None
        out: JsonObject = {"type": "RUN_ERROR", "message": str(message or text(error) or "the turn failed")}
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            out["code"] = error["code"]
        return out
    done: JsonObject = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
                            "outcome": {"type": "success"}}
    if turn is not None and turn.data is not None:
        done["result"] = turn.data
    return done


def to_continue(thread_id: str, run_id: str, after_seq: int) -> JsonObject:
    """The last event of a run cut short by the long-poll cap: the turn goes on; `connect` to follow it."""
    return {"type": "CUSTOM", "name": "holdpoint.continue",
            "value": {"threadId": thread_id, "runId": run_id, "afterSeq": after_seq, "connect": True}}
