"""The A2A server's translations (PROTOCOL.md §8): A2A 1.0 JSON-RPC requests in (their models are
`models`), A2A tasks out. A context is a session, a task is a turn,
`TASK_STATE_INPUT_REQUIRED` is a turn parked on open interrupts.

A task id names its session and its turn (`<session_id>~<turn_id>`): `GetTask` and `CancelTask`
carry only the task id, and `~` is in no Holdpoint id. Pure: the services feed it loaded state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

from holdpoint.core import answers, approvals, schemas
from holdpoint.core.agent_config import A2aConfig
from holdpoint.core.errors import Code, Refusal
from holdpoint.core.ids import ID_PATTERN, pair_id, split_pair
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.push import PushAuth, PushRecord
from holdpoint.core.state import Interrupt, SessionState, Turn

if TYPE_CHECKING:
    from holdpoint.bridges.a2a.models import Message, PushSpec

PROTOCOL_VERSION = "1.0"

# JSON-RPC 2.0 and A2A 1.0 error codes (the a2a-sdk client maps each to its error class).
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, PUSH_NOT_SUPPORTED, UNSUPPORTED = -32001, -32002, -32003, -32004
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"

# --- ids ---------------------------------------------------------------------------------


def task_id(session_id: str, turn_id: str) -> str:
    return pair_id(session_id, turn_id)


def split_task(value: str, param: str) -> tuple[str, str]:
    """(session_id, turn_id) of a task id; one that cannot be ours is an unknown task."""
    return split_pair(value, "task", param)


# --- in ----------------------------------------------------------------------------------


def content_of(message: Message) -> str:
    """A user message's content: its text parts, and each data part as JSON text."""
    out = []
    for index, part in enumerate(message.parts):
        if part.raw is not None or part.url is not None:
            raise Refusal("validation_error", "file parts are not accepted; send text or data",
                          f"message.parts[{index}]")
        if part.text is not None:
            out.append(part.text)
        elif part.data is not None:
            out.append(json.dumps(part.data))
        else:
            raise Refusal("validation_error", "a part has text or data", f"message.parts[{index}]")
    return "\n".join(out)


def answer_of(message: Message) -> tuple[str | None, JsonValue]:
    """A resume: the message's first data part (its `metadata.interruptId` may name the interrupt)."""
    for part in message.parts:
        if part.data is not None:
            named = (part.metadata or {}).get("interruptId")
            return (named if isinstance(named, str) else None), part.data
    raise Refusal("validation_error", "an input-required task is answered with a data part (the interrupt's "
                  "answer)", "message.parts")


def turn_id_of(message: Message) -> str | None:
    """The turn a new message starts: named by its `messageId` when that is a valid id, so a
    retried `SendMessage` starts no second turn (R7)."""
    return message.messageId if ID_PATTERN.fullmatch(message.messageId) else None


# --- out ---------------------------------------------------------------------------------


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else json.dumps(content)


def message_out(message: JsonObject, context_id: str, task: str | None = None) -> JsonObject | None:
    """A recorded user or assistant message with text, as an A2A message (None for others)."""
    role = {"user": "ROLE_USER", "assistant": "ROLE_AGENT"}.get(str(message.get("role")))
    body = _text(message.get("content"))
    if role is None or not body:
        return None
    out: JsonObject = {"messageId": message["id"], "role": role, "parts": [{"text": body}],
                       "contextId": context_id}
    if task:
        out["taskId"] = task
    return out


def interrupt_out(interrupt: Interrupt) -> JsonObject:
    """An interrupt as the data part of an input-required status: what answering it needs."""
    out: JsonObject = {"interruptId": interrupt.interrupt_id, "reason": interrupt.reason,
                       "payload": interrupt.payload, "origin": interrupt.origin}
    schema = schemas.declared(interrupt.response_schema, interrupt.payload)
    if isinstance(schema, dict):
        out["responseSchema"] = schema
    if interrupt.expires_at is not None:
        out["expiresAt"] = interrupt.expires_at
    out["options"] = [*answers.options_of(interrupt.payload)]
    if interrupt.action is not None:
        out["fingerprint"] = interrupt.action.fingerprint
    return out


def turn_interrupts(state: SessionState, turn_id: str) -> list[Interrupt]:
    """The interrupts raised in this turn, oldest first (open and closed)."""
    return sorted((i for i in state.interrupts.values() if i.turn_id == turn_id),
                  key=lambda i: (i.created_at, i.interrupt_id))


def parked_on(state: SessionState, turn_id: str) -> list[Interrupt]:
    return [i for i in turn_interrupts(state, turn_id) if i.status == "open"]


TaskState = Literal["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED",
                    "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"]
TERMINAL: frozenset[str] = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"})


def state_of(state: SessionState, turn: Turn) -> TaskState:
    """The task's state, read off its turn and the turn's interrupts."""
    raised = turn_interrupts(state, turn.id)
    if any(i.status == "resolved" and approvals.outcome(i).verdict == "cancelled" for i in raised):
        return "TASK_STATE_CANCELED"
    if any(i.status == "open" for i in raised):
        return "TASK_STATE_INPUT_REQUIRED"
    if turn.status == "done":
        return "TASK_STATE_COMPLETED"
    if turn.status == "failed":
        return "TASK_STATE_FAILED"
    return "TASK_STATE_SUBMITTED" if turn.status == "queued" else "TASK_STATE_WORKING"


def task_out(state: SessionState, turn: Turn, history_length: int | None = None) -> JsonObject:
    """The A2A task of a turn: its state and status message (the interrupts, when it waits for
    input; the last reply or the error otherwise), the session's messages as history, and the
    turn's `done` data as an artifact."""
    sid = state.header.session_id
    tid = task_id(sid, turn.id)
    kind = state_of(state, turn)
    history = [m for m in (message_out(n.message, sid, tid) for n in state.tree.active_path()) if m is not None]
    status: JsonObject = {"state": kind, "timestamp": _timestamp(turn.created_at)}
    note = _status_message(state, turn, kind, tid, history)
    if note is not None:
        status["message"] = note
    out: JsonObject = {"id": tid, "contextId": sid, "status": status}
    limit = len(history) if history_length is None else history_length
    if limit:
        out["history"] = [*history[-limit:]]
    if kind == "TASK_STATE_COMPLETED" and turn.data is not None:
        out["artifacts"] = [{"artifactId": f"{turn.id}.data", "name": "data", "parts": [{"data": turn.data}]}]
    return out


def _status_message(state: SessionState, turn: Turn, kind: str, tid: str,
                    history: list[JsonObject]) -> JsonObject | None:
    sid = state.header.session_id
    if kind == "TASK_STATE_INPUT_REQUIRED":
        waiting = parked_on(state, turn.id)
        first = waiting[0]
        said = first.payload.get("message") if isinstance(first.payload, dict) else None
        return {"messageId": f"{first.interrupt_id}.g{first.generation}", "role": "ROLE_AGENT", "contextId": sid,
                "taskId": tid, "parts": [{"text": said if isinstance(said, str) else first.reason},
                                         {"data": {"interrupts": [interrupt_out(i) for i in waiting]}}]}
    if kind == "TASK_STATE_FAILED":
        error = turn.error
        text = error.get("message") if isinstance(error, dict) else None
        return {"messageId": f"{turn.id}.error", "role": "ROLE_AGENT", "contextId": sid, "taskId": tid,
                "parts": [{"text": str(text or _text(error) or "the turn failed")}]}
    if kind == "TASK_STATE_COMPLETED" and history and history[-1]["role"] == "ROLE_AGENT":
        return history[-1]
    return None


def _timestamp(iso: str) -> str:
    """A recorded time as ProtoJSON's Timestamp (RFC 3339, `Z`)."""
    return iso if iso.endswith("Z") else (iso + "Z" if iso else "1970-01-01T00:00:00Z")


def card(base_url: str, tenant: str, agent_id: str, declared: A2aConfig) -> JsonObject:
    """The Agent Card: one JSON-RPC interface at `POST /a2a/{tenant}/{agent_id}`, bearer auth
    (an API key or a client token), streaming, push notifications (signed webhook deliveries)."""
    name = declared.name or agent_id
    skills = declared.skills or [{"id": agent_id, "name": name, "description": declared.description or name,
                                  "tags": ["holdpoint"]}]
    return {
        "name": name,
        "description": declared.description or f"The Holdpoint agent {agent_id}",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": f"{base_url.rstrip('/')}/a2a/{tenant}/{agent_id}", "protocolBinding": "JSONRPC",
                                 "protocolVersion": PROTOCOL_VERSION}],
        "capabilities": {"streaming": True, "pushNotifications": True},
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {
            "scheme": "Bearer", "description": "A Holdpoint API key or a client token"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [*skills],
    }


# --- push notifications -------------------------------------------------------------------

MAX_PUSH_CONFIGS = 10
"""A task's push configs: each state change is one delivery per config, so the fan-out is bounded."""
TOKEN_HEADER = "X-A2A-Notification-Token"
PUSHED_STATES: frozenset[str] = TERMINAL | {"TASK_STATE_INPUT_REQUIRED"}
"""The states a push announces: a turn that parks (input-required) and one that ends."""


def stored_config(spec: PushSpec, turn_id: str) -> PushRecord:
    """What is kept of a config (its id defaults to the task's turn, as A2A defaults it to the task)."""
    auth = spec.authentication
    return PushRecord(spec.id or turn_id, spec.url, spec.token,
                      PushAuth(auth.scheme, auth.credentials) if auth is not None else None)


def config_out(session_id: str, stored: PushRecord) -> JsonObject:
    """A kept config as A2A's `TaskPushNotificationConfig`, without its secrets: the token and the
    credentials are write-only (they are sent to the receiver, never shown again)."""
    out: JsonObject = {"id": stored.id, "taskId": task_id(session_id, stored.turn_id or ""), "url": stored.url}
    if stored.auth is not None:
        out["authentication"] = {"scheme": stored.auth.scheme}
    return out


class ConfigList(TypedDict):
    """`ListTaskPushNotificationConfigs`'s answer: every config of the task, in one page."""

    configs: list[JsonObject]


def push_headers(stored: PushRecord) -> dict[str, str]:
    """The headers A2A sends a push with: the config's token, and its `Authorization`."""
    out: dict[str, str] = {}
    if stored.token:
        out[TOKEN_HEADER] = stored.token
    if stored.auth is not None and stored.auth.credentials:
        out["Authorization"] = f"{stored.auth.scheme} {stored.auth.credentials}"
    return out


def pushed_turn(state: SessionState, event: Mapping[str, object]) -> str | None:
    """The turn whose task an event-log entry changes into a pushed state: a `session.interrupted`
    (the turn parks) or a `turn.finished`/`turn.failed` (it ends); None for any other entry."""
    data = event.get("data") or {}
    if not isinstance(data, dict):  # the log's entries carry an object
        raise TypeError("an event's data is an object")
    if event.get("type") == "session.interrupted":
        interrupt = state.interrupts.get(str(data.get("interrupt_id")))
        return interrupt.turn_id if interrupt is not None else None
    if event.get("type") in ("turn.finished", "turn.failed"):
        turn = data.get("turn_id")
        return turn if isinstance(turn, str) else None
    return None


def push_body(state: SessionState, turn: Turn) -> JsonObject:
    """A push's body: A2A's `StreamResponse` with the task (no history: the receiver reads it with
    `GetTask`), as the A2A SDK's sender posts it."""
    return {"task": task_out(state, turn, 0)}


# --- JSON-RPC answers --------------------------------------------------------------------

_CODES: dict[Code, int] = {
    "not_found": TASK_NOT_FOUND,
    "interrupted": UNSUPPORTED, "turn_already_active": UNSUPPORTED, "conflict": UNSUPPORTED,
    "call_held": UNSUPPORTED, "call_not_open": UNSUPPORTED, "quota_exceeded": UNSUPPORTED,
    "decision_not_current": UNSUPPORTED,
}
"""Refusals as JSON-RPC codes; every other one (a field, a schema, a policy) is `InvalidParams`."""


class ResultAnswer(TypedDict):
    jsonrpc: Literal["2.0"]
    id: JsonValue
    result: object


ErrorInfo = TypedDict("ErrorInfo", {"@type": str, "reason": str, "domain": str, "metadata": dict[str, str]})
"""google.rpc.ErrorInfo, as A2A carries it in a JSON-RPC error's `data`."""


class ErrorBody(TypedDict):
    code: int
    message: str
    data: list[ErrorInfo]


class ErrorAnswer(TypedDict):
    jsonrpc: Literal["2.0"]
    id: JsonValue
    error: ErrorBody


def result(request_id: JsonValue, value: object) -> ResultAnswer:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: JsonValue, code: int, message: str, reason: str, param: str | None = None,
          **extra: object) -> ErrorAnswer:
    """A JSON-RPC error; its `data` is an A2A ErrorInfo whose metadata names the field (`param`)."""
    meta = {"code": reason.lower(), **({"param": param} if param else {}), **{k: str(v) for k, v in extra.items()}}
    return {"jsonrpc": "2.0", "id": request_id, "error": {
        "code": code, "message": message, "data": [{"@type": ERROR_INFO, "reason": reason.upper(),
                                                    "domain": "holdpoint", "metadata": meta}]}}


def refused(request_id: JsonValue, refusal: Refusal, code: int | None = None) -> ErrorAnswer:
    """A refusal as a JSON-RPC error, naming its field in the message and in `data`."""
    text = f"{refusal.message} ({refusal.param})" if refusal.param else refusal.message
    extra = {k: v for k, v in refusal.extra.items() if isinstance(v, str | int)}
    if refusal.retry_after is not None:
        extra["retry_after"] = refusal.retry_after
    return error(request_id, code or _CODES.get(refusal.code, INVALID_PARAMS), text, refusal.code, refusal.param,
                 **extra)
