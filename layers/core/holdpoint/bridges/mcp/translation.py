"""The MCP server's translations (PROTOCOL.md §9; its wire models are `models`): MCP
revision 2026-07-28, the stateless one (every request carries its protocol version and client
capabilities in `params._meta`; no `initialize`, no session header), with the tasks extension
(`io.modelcontextprotocol/tasks`) and multi round-trip requests (`input_required`).

An approval is an interrupt in the caller's approvals session; its id (and its task's id) is
`<session_id>~<interrupt_id>` (`~` is in no Holdpoint id). Pure: the services feed it loaded state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from holdpoint.bridges.mcp.models import TOOLS, Elicited, RequestApproval
from holdpoint.core import answers, approvals, schemas
from holdpoint.core.errors import Refusal, RpcError
from holdpoint.core.ids import pair_id, split_pair
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.state import Interrupt

PROTOCOL_VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
POLL_MS = 2_000

# JSON-RPC 2.0 and MCP 2026-07-28 error codes, and the HTTP status each is sent with.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION = -32020, -32021, -32022
HTTP_STATUS: dict[int, int] = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
                               MISSING_CAPABILITY: 400, UNSUPPORTED_VERSION: 400, METHOD_NOT_FOUND: 404}

# --- what the tools answer ------------------------------------------------------------------


class Approval(TypedDict):
    """An approval as the tools answer it (`approval_out`; a listed one of `answerable` carries the
    first four only)."""

    id: str
    status: str
    question: str | None
    created_at: str
    options: NotRequired[list[JsonObject]]
    response_schema: NotRequired[JsonObject]
    expires_at: NotRequired[str]
    policy: NotRequired[JsonObject]
    approvals: NotRequired[list[JsonObject]]
    action: NotRequired[JsonObject]
    """A3: the action an approval approves (its fingerprint; the last edit's once edited)."""
    edits: NotRequired[list[JsonObject]]
    answer: NotRequired[JsonValue]
    verdict: NotRequired[str]
    responder: NotRequired[JsonObject | None]
    resolved_at: NotRequired[str | None]
    noop: NotRequired[bool]
    """`answer_approval`'s: the answer changed nothing (A4)."""


class Approvals(TypedDict):
    approvals: list[Approval]


class TextContent(TypedDict):
    type: Literal["text"]
    text: str


class ToolResult(TypedDict):
    """A `tools/call` result: the value as text and as `structuredContent`."""

    resultType: Literal["complete"]
    content: list[TextContent]
    structuredContent: Mapping[str, object]
    isError: bool


class Task(TypedDict):
    """An approval as a task of the tasks extension."""

    resultType: Literal["task", "complete"]
    taskId: str
    status: Literal["working", "cancelled", "completed"]
    createdAt: str
    lastUpdatedAt: str
    ttlMs: None
    pollIntervalMs: int
    statusMessage: NotRequired[str]
    result: NotRequired[ToolResult]


class InputRequired(TypedDict):
    """`request_approval` answered by the caller's own user: the elicitation it asks for, and the
    sealed state its retry carries."""

    resultType: Literal["input_required"]
    requestState: str
    inputRequests: dict[str, JsonObject]


class Complete(TypedDict):
    resultType: Literal["complete"]


class Tool(TypedDict):
    """A `tools/list` entry."""

    name: str
    description: str
    inputSchema: JsonObject


# --- ids ---------------------------------------------------------------------------------


def approval_id(session_id: str, interrupt_id: str) -> str:
    return pair_id(session_id, interrupt_id)


def split_id(value: str, param: str) -> tuple[str, str]:
    """(session_id, interrupt_id) of an approval id; one that cannot be ours is an unknown approval."""
    return split_pair(value, "approval", param)


# --- envelope ----------------------------------------------------------------------------


def envelope(params: Mapping[str, object] | None) -> tuple[str, JsonObject]:
    """The request's protocol version and client capabilities (`params._meta`), or -32602 naming the key."""
    meta = (params or {}).get("_meta")
    if not isinstance(meta, dict) or VERSION_KEY not in meta or CAPABILITIES_KEY not in meta:
        raise RpcError(INVALID_PARAMS, f"params._meta carries {VERSION_KEY} and {CAPABILITIES_KEY} "
                      f"(MCP {PROTOCOL_VERSION} is stateless: every request says both)", "params._meta")
    version, capabilities = meta[VERSION_KEY], meta[CAPABILITIES_KEY]
    if not isinstance(version, str) or not isinstance(capabilities, dict):
        raise RpcError(INVALID_PARAMS, "the protocol version is a string and the capabilities an object",
                      f"params._meta.{VERSION_KEY}")
    return version, capabilities


def has_tasks(capabilities: Mapping[str, object]) -> bool:
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS), dict)


def has_form_elicitation(capabilities: Mapping[str, object]) -> bool:
    """A client that declares `elicitation` ({} means form) or `elicitation.form`."""
    found = capabilities.get("elicitation")
    return isinstance(found, dict) and (not found or isinstance(found.get("form"), dict))


# --- approvals in --------------------------------------------------------------------------


def interrupt_payload(args: RequestApproval) -> JsonObject:
    """The interrupt's payload: the question as its message, the options as `metadata.options`
    (so Slack's buttons, the links and the inbox page offer them)."""
    out: JsonObject = {"message": args.question}
    if args.options:
        out["metadata"] = {"options": [o if isinstance(o, str) else o.model_dump(mode="json") for o in args.options]}
    return out


_KEEP = {
    "string": ("title", "description", "minLength", "maxLength", "format", "default", "enum", "enumNames", "oneOf"),
    "number": ("title", "description", "minimum", "maximum", "default"),
    "integer": ("title", "description", "minimum", "maximum", "default"),
    "boolean": ("title", "description", "default"),
    "array": ("title", "description", "minItems", "maxItems", "items", "default"),
}
_FORMATS = {"email", "uri", "date", "date-time"}
_TOP = {"type", "properties", "required", "title", "description", "$schema", "additionalProperties"}


def elicitation_schema(response_schema: Mapping[str, object] | None,
                       options: list[JsonObject]) -> JsonObject:
    """The form an elicitation asks for: the response schema mapped onto MCP's restricted one (a
    flat object of strings, numbers, booleans and enums), or, with none, a choice among the
    options, or an `approved` boolean. A schema that does not fit is refused naming the field."""
    if response_schema is None:
        if options:
            return {"type": "object", "required": ["choice"], "properties": {"choice": {
                "type": "string", "title": "Answer",
                "oneOf": [{"const": str(i), "title": o["label"]} for i, o in enumerate(options)]}}}
        return {"type": "object", "required": ["approved"],
                "properties": {"approved": {"type": "boolean", "title": "Approve"}}}
    where = "response_schema"
    properties = response_schema.get("properties")
    if response_schema.get("type") != "object" or not isinstance(properties, dict):
        raise Refusal("validation_error", "an elicitation asks for an object with properties", f"{where}.type")
    for key in response_schema:
        if key not in _TOP:
            raise Refusal("validation_error", f"MCP's elicitation schema has no {key!r}", f"{where}.{key}")
    if response_schema.get("additionalProperties") not in (None, False):
        raise Refusal("validation_error", "an elicitation form has only its properties",
                      f"{where}.additionalProperties")
    out: JsonObject = {"type": "object", "properties": {
        name: _primitive(prop, f"{where}.properties.{name}") for name, prop in properties.items()}}
    required = response_schema.get("required")
    if required and isinstance(required, list):  # checked against the meta-schema when declared: an array
        out["required"] = list(required)
    return out


def _primitive(prop: object, where: str) -> JsonObject:
    """One property as an elicitation primitive, or a Refusal naming the keyword that does not fit."""
    if not isinstance(prop, dict):
        raise Refusal("validation_error", "a property is a schema object", where)
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _KEEP:
        raise Refusal("validation_error", "an elicitation property is a string, number, integer, boolean or an "
                      "array of enum strings (no nested objects)", f"{where}.type")
    for key in prop:
        if key != "type" and key not in _KEEP[kind]:
            raise Refusal("validation_error", f"MCP's elicitation schema has no {key!r} on a {kind}", f"{where}.{key}")
    if kind == "string" and "format" in prop and prop["format"] not in _FORMATS:
        raise Refusal("validation_error", f"an elicitation string's format is one of {sorted(_FORMATS)}",
                      f"{where}.format")
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict) or not (
                (items.get("type") == "string" and isinstance(items.get("enum"), list)) or
                isinstance(items.get("anyOf"), list)):
            raise Refusal("validation_error", "an elicitation array is a multi-select of enum strings",
                          f"{where}.items")
    return dict(prop)


def answer_from(elicited: Elicited, interrupt: Interrupt) -> Any:
    """The resume payload an elicitation result carries: the form as it was filled (a choice
    mapped back to its option's value, AG-UI's shape, as the inbox's option buttons answer),
    or the decline."""
    if elicited.action != "accept":
        return dict(answers.CANCELLED)
    content = elicited.content or {}
    options = answers.declared_options(interrupt.payload)
    if schemas.declared(interrupt.response_schema, interrupt.payload) is None and options:
        choice = content.get("choice")
        index = int(choice) if isinstance(choice, str) and choice.isdigit() else -1
        if not 0 <= index < len(options):
            raise Refusal("validation_error", "the choice is none of the options", "inputResponses.content.choice")
        return {"status": "resolved", "payload": options[index]["value"]}
    return content


# --- out ---------------------------------------------------------------------------------


def approval_out(session_id: str, interrupt: Interrupt, *, policy: bool = True) -> Approval:
    """An approval as the tools answer it: the question, its state, and once closed the answer;
    without `policy` (an end user's: who the tenant's approvers are is not hers to read)."""
    out: Approval = {"id": approval_id(session_id, interrupt.interrupt_id), "status": interrupt.status,
                     "question": _question(interrupt), "created_at": interrupt.created_at}
    options = answers.declared_options(interrupt.payload)
    if options:
        out["options"] = options
    schema = schemas.declared(interrupt.response_schema, interrupt.payload)
    if isinstance(schema, dict):
        out["response_schema"] = schema
    if interrupt.expires_at:
        out["expires_at"] = interrupt.expires_at
    if interrupt.policy is not None and policy:  # an end user's: left out
        out["policy"] = interrupt.policy.to_item()
    if interrupt.approvals:
        out["approvals"] = [a.to_item() for a in interrupt.approvals]
    if interrupt.action is not None:
        out["action"] = interrupt.action.to_item()
    if interrupt.edits:
        out["edits"] = [e.to_item() for e in interrupt.edits]
    if interrupt.status != "open":
        out["answer"] = interrupt.resolution
        out["responder"] = interrupt.responder.to_item() if interrupt.responder else None
        out["verdict"] = approvals.outcome(interrupt).verdict
        out["resolved_at"] = interrupt.resolved_at
    return out


def _question(interrupt: Interrupt) -> str:
    said = interrupt.payload.get("message") if isinstance(interrupt.payload, dict) else None
    return said if isinstance(said, str) else interrupt.reason


def tool_result(value: Mapping[str, object], text: str | None = None) -> ToolResult:
    return {"resultType": "complete", "content": [{"type": "text", "text": text or json.dumps(value)}],
            "structuredContent": value, "isError": False}


def tool_error(refusal: Refusal) -> ToolResult:
    """A refusal inside a tool: a result with `isError` (the model reads it and can correct itself)."""
    body = {"error": {"code": refusal.code, "message": refusal.message, "param": refusal.param}}
    text = f"{refusal.code}: {refusal.message}" + (f" ({refusal.param})" if refusal.param else "")
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "structuredContent": body,
            "isError": True}


def task_out(session_id: str, interrupt: Interrupt, now_iso: str, *, created: bool = False) -> Task:
    """The approval as a task of the tasks extension: `working` while a person has not answered,
    `completed` with the tool's result once one has (or it expired), `cancelled` when declined."""
    status: Literal["working", "cancelled", "completed"] = "working" if interrupt.status == "open" else (
        "cancelled" if approvals.outcome(interrupt).verdict == "cancelled" else "completed")
    out: Task = {"resultType": "task" if created else "complete",
                 "taskId": approval_id(session_id, interrupt.interrupt_id), "status": status,
                 "createdAt": interrupt.created_at, "lastUpdatedAt": interrupt.resolved_at or now_iso,
                 "ttlMs": None, "pollIntervalMs": POLL_MS}
    if status == "working":
        out["statusMessage"] = "waiting for an approver"
    elif status == "completed":
        out["result"] = tool_result(approval_out(session_id, interrupt))
    return out


def elicitation(interrupt: Interrupt, schema: JsonObject) -> JsonObject:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": _question(interrupt),
                                                       "requestedSchema": schema}}


def tools() -> list[Tool]:
    out: list[Tool] = []
    for name, (model, description) in TOOLS.items():
        schema = model.model_json_schema()
        schema.pop("title", None)
        out.append({"name": name, "description": description, "inputSchema": schema})
    return out


def discover() -> JsonObject:
    return {"resultType": "complete", "supportedVersions": [PROTOCOL_VERSION], "cacheScope": "public",
            "ttlMs": 0, "capabilities": {"tools": {"listChanged": False}, "extensions": {TASKS: {}}},
            "serverInfo": {"name": "holdpoint", "version": "1.0.0"},
            "instructions": "Holdpoint's approvals: request_approval asks a person (under the tenant's policies, "
                            "quorums and notify channels); the answer comes back as the task's result."}


class RpcResult(TypedDict):
    jsonrpc: Literal["2.0"]
    id: JsonValue
    result: object


class RpcErrorBody(TypedDict):
    code: int
    message: str
    data: NotRequired[JsonObject]
    """The field at fault (`param`) and whatever else the error says."""


class RpcErrorAnswer(TypedDict):
    jsonrpc: Literal["2.0"]
    id: JsonValue
    error: RpcErrorBody


def result(request_id: JsonValue, value: object) -> RpcResult:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: JsonValue, code: int, message: str, param: str | None = None,
          **data: JsonValue) -> RpcErrorAnswer:
    """A JSON-RPC error; its `data` names the field at fault (`param`)."""
    body: RpcErrorBody = {"code": code, "message": message}
    extra: JsonObject = {**({"param": param} if param else {}), **data}
    if extra:
        body["data"] = extra
    return {"jsonrpc": "2.0", "id": request_id, "error": body}
