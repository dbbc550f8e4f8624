"""The chat-completions message shape: the one the engine stores prompts in, and the one an
OpenAI-compatible endpoint takes (stored messages lose the engine's own fields on the way)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.llm.call import Tool

_CHAT_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")


def text(content: object) -> str:
    """A message's content as plain text (the text parts of a list, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def arguments_json(arguments: JsonValue) -> str:
    """Tool-call arguments as the JSON string the chat shape carries."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {})


def _function(tc: JsonValue) -> JsonObject:
    """A recorded tool call's `function` (none: empty); a tool call is an object."""
    if not isinstance(tc, dict):
        raise TypeError("a tool call is an object")
    fn = tc.get("function") or {}
    if not isinstance(fn, dict):
        raise TypeError("a tool call's function is an object")
    return fn


def chat_message(m: JsonObject) -> JsonObject:
    """A stored message as a chat-completions message: engine fields (id, ...) dropped,
    tool-call arguments as JSON strings, structured tool results as JSON text."""
    out: JsonObject = {k: m[k] for k in _CHAT_FIELDS if k in m and m[k] is not None}
    if m.get("role") == "assistant" and "content" not in out:
        out["content"] = None
    if m.get("role") == "tool" and isinstance(out.get("content"), dict):
        out["content"] = json.dumps(out["content"])
    calls = out.get("tool_calls")
    if calls:
        if not isinstance(calls, list):  # a recorded message's tool calls are a list of objects
            raise TypeError("tool_calls is a list")
        out["tool_calls"] = [{"id": tc.get("id") if isinstance(tc, dict) else None, "type": "function",
                              "function": {"name": _function(tc).get("name"),
                                           "arguments": arguments_json(_function(tc).get("arguments"))}}
                             for tc in calls]
    return out


def chat_request(config: Mapping[str, object], model: str, tools: list[Tool], temperature: float | None,
                 max_tokens: int | None, messages: list[JsonObject]) -> JsonObject:
    """The body of `POST {base_url}/chat/completions` (JSON: the name of its token cap is the
    llm block's `max_tokens_param`)."""
    body: JsonObject = {"model": model, "messages": [chat_message(m) for m in messages]}
    if tools:
        offered: list[JsonValue] = []
        body["tools"] = offered
        for tool in tools:
            fn: JsonObject = {"name": tool.name, "parameters": tool.schema}
            if tool.description:
                fn["description"] = tool.description
            offered.append({"type": "function", "function": fn})
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        key = config.get("max_tokens_param") or "max_completion_tokens"
        body[key if isinstance(key, str) else json.dumps(key)] = max_tokens  # as json.dumps writes a key
    return body
