"""Chat messages as a Bedrock Converse request: system text apart, tool results as `toolResult`
blocks in user turns, tool calls as `toolUse` blocks, one turn per role in alternation."""

from __future__ import annotations

import base64
import json
import re
from typing import NotRequired, TypedDict

from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.state import derive
from holdpoint.llm.call import Tool
from holdpoint.llm.chat import text
from holdpoint.ports import LlmError

_TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_.:-]{1,64}$")


# --- the Converse shapes Holdpoint sends ------------------------------------------------------


class Text(TypedDict):
    text: str


class ImageSource(TypedDict):
    bytes: bytes


class Image(TypedDict):
    format: str
    source: ImageSource


class ToolUse(TypedDict):
    toolUseId: str
    name: JsonValue
    """The recorded tool call's function name, as recorded."""
    input: JsonObject


class ToolResult(TypedDict):
    toolUseId: str
    content: list[Text]


class Block(TypedDict, total=False):
    """A Converse content block: exactly one of its members."""

    text: str
    image: Image
    toolUse: ToolUse
    toolResult: ToolResult


class Turn(TypedDict):
    role: str
    content: list[Block]


class SchemaJson(TypedDict):
    json: JsonObject


class ToolSpec(TypedDict):
    name: str
    inputSchema: SchemaJson
    description: NotRequired[str]


class ToolEntry(TypedDict):
    toolSpec: ToolSpec


class ToolConfig(TypedDict):
    tools: list[ToolEntry]


class Inference(TypedDict, total=False):
    maxTokens: int
    temperature: float


class ConverseParams(TypedDict):
    """The keyword arguments of `bedrock-runtime` `converse` (and `converse_stream`)."""

    modelId: str
    messages: list[Turn]
    system: NotRequired[list[Text]]
    inferenceConfig: NotRequired[Inference]
    toolConfig: NotRequired[ToolConfig]


# --- chat messages in ------------------------------------------------------------------------


def _image_block(part: JsonObject) -> Block:
    image = part.get("image_url")
    url = str((image.get("url") if isinstance(image, dict) else image) or "")
    head, sep, data = url.partition(",")
    if not (url.startswith("data:image/") and sep and head.endswith(";base64")):
        raise LlmError("bedrock takes images only as data:image/...;base64 URLs", "invalid_request")
    fmt = head[len("data:image/"):-len(";base64")]
    fmt = "jpeg" if fmt == "jpg" else fmt
    return {"image": {"format": fmt, "source": {"bytes": base64.b64decode(data)}}}


def _blocks(content: JsonValue) -> list[Block]:
    """Chat content (string or parts) as Converse content blocks; empty text is dropped
    (Converse rejects blank text blocks)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    if isinstance(content, dict):
        return [{"text": json.dumps(content)}]
    if not isinstance(content, list):  # a number or a boolean: no parts to iterate
        raise TypeError(f"{type(content).__name__!r} object is not iterable")
    blocks: list[Block] = []
    for part in content:
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, dict):
            raise LlmError(f"bedrock cannot send a {None!r} content part", "invalid_request")
        kind = part.get("type", "text")
        if kind == "text":
            value = str(part.get("text") or "")
            if value.strip():
                blocks.append({"text": value})
        elif kind == "image_url":
            blocks.append(_image_block(part))
        else:
            raise LlmError(f"bedrock cannot send a {kind!r} content part", "invalid_request")
    return blocks


def _tool_input(arguments: JsonValue) -> JsonObject:
    """Assistant tool-call arguments (a JSON string) as a toolUse `input` object; arguments that
    are not a JSON object (a model's malformed call) are kept verbatim under `raw`."""
    if isinstance(arguments, dict):
        return arguments
    if arguments in (None, ""):
        return {}
    if not isinstance(arguments, str):  # what json.loads refuses with a TypeError
        return {"raw": str(arguments)}
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return {"raw": str(arguments)}
    return value if isinstance(value, dict) else {"raw": arguments}


def _tool_use_id(call_id: JsonValue) -> str:
    """Converse wants toolUseIds of 1-64 `[a-zA-Z0-9_.:-]`; an id from elsewhere (a client, another
    provider) that is not one is replaced by a stable digest, the same for the call and its result."""
    value = str(call_id or "")
    return value if _TOOL_USE_ID.match(value) else derive("tu", value)


def _turn(m: JsonObject) -> tuple[str, list[Block]]:
    """One non-system chat message as a Converse (role, blocks)."""
    role = m.get("role")
    if role == "tool":
        content = m.get("content")
        value = json.dumps(content) if isinstance(content, dict) else text(content)
        result: ToolResult = {"toolUseId": _tool_use_id(m.get("tool_call_id")),
                                  "content": [{"text": value}] if value.strip() else []}
        return "user", [{"toolResult": result}]
    if role == "assistant":
        blocks = _blocks(m.get("content"))
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):  # a recorded message's tool calls are a list of objects
            raise TypeError("tool_calls is a list")
        for tc in calls:
            if not isinstance(tc, dict):
                raise TypeError("a tool call is an object")
            fn = tc.get("function") or {}
            if not isinstance(fn, dict):
                raise TypeError("a tool call's function is an object")
            blocks.append({"toolUse": {"toolUseId": _tool_use_id(tc.get("id")), "name": fn.get("name"),
                                       "input": _tool_input(fn.get("arguments"))}})
        return "assistant", blocks
    if role == "user":
        return "user", _blocks(m.get("content"))
    raise LlmError(f"unknown message role {role!r}", "invalid_request")


def converse_messages(messages: list[JsonObject]) -> tuple[list[Text], list[Turn]]:
    """Chat messages as Converse `(system, messages)`: every system message (wherever it stands)
    goes to `system`; consecutive turns of one role merge into one, as Converse requires
    alternating roles; a message left with no content is skipped."""
    system: list[Text] = []
    out: list[Turn] = []
    for m in messages:
        if m.get("role") == "system":
            value = text(m.get("content"))
            if value.strip():
                system.append({"text": value})
            continue
        turn_role, blocks = _turn(m)
        if not blocks:
            continue
        if out and out[-1]["role"] == turn_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": turn_role, "content": blocks})
    return system, out


def _history_tool_names(turns: list[Turn]) -> list[str]:
    names: list[str] = []
    for turn in turns:
        for block in turn["content"]:
            use = block.get("toolUse")
            name = use["name"] if use is not None else None
            if isinstance(name, str) and name and name not in names:  # recorded names are strings
                names.append(name)
    return names


def _tool_config(tools: list[Tool], turns: list[Turn]) -> list[ToolEntry]:
    specs: list[ToolEntry] = []
    for tool in tools:
        spec: ToolSpec = {"name": tool.name, "inputSchema": {"json": tool.schema}}
        if tool.description:
            spec["description"] = tool.description
        specs.append({"toolSpec": spec})
    # Converse refuses toolUse/toolResult blocks without a toolConfig: when the tools were
    # withdrawn mid-conversation, declare the ones the history used, with an open schema.
    declared = {t.name for t in tools}
    for name in _history_tool_names(turns):
        if name not in declared:
            specs.append({"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}})
    if not specs and any("toolResult" in b for t in turns for b in t["content"]):
        raise LlmError("tool results in the prompt but no tool is declared", "invalid_request")
    return specs


def converse_request(model: str, tools: list[Tool], temperature: float | None,
                     max_tokens: int | None, messages: list[JsonObject]) -> ConverseParams:
    """The keyword arguments of `bedrock-runtime` `converse`."""
    system, turns = converse_messages(messages)
    params: ConverseParams = {"modelId": model, "messages": turns}
    if system:
        params["system"] = system
    inference: Inference = {}
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if temperature is not None:
        inference["temperature"] = temperature
    if inference:
        params["inferenceConfig"] = inference
    specs = _tool_config(tools, turns)
    if specs:
        params["toolConfig"] = {"tools": specs}
    return params
