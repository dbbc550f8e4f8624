"""The chat-completions message shape: the one the engine stores prompts in, and the one an
OpenAI-compatible endpoint takes (stored messages lose the engine's own fields on the way)."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.llm.call import Tool

_CHAT_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")


def text(content: Any) -> str:
    """A message's content as plain text (the text parts of a list, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def arguments_json(arguments: Any) -> str:
    """Tool-call arguments as the JSON string the chat shape carries."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {})


def chat_message(m: dict[str, Any]) -> dict[str, Any]:
    """A stored message as a chat-completions message: engine fields (id, ...) dropped,
    tool-call arguments as JSON strings, structured tool results as JSON text."""
    out = {k: m[k] for k in _CHAT_FIELDS if k in m and m[k] is not None}
    if m.get("role") == "assistant" and "content" not in out:
        out["content"] = None
    if m.get("role") == "tool" and isinstance(out.get("content"), dict):
        out["content"] = json.dumps(out["content"])
    if out.get("tool_calls"):
        out["tool_calls"] = [{"id": tc.get("id"), "type": "function",
                              "function": {"name": (tc.get("function") or {}).get("name"),
                                           "arguments": arguments_json((tc.get("function") or {}).get("arguments"))}}
                             for tc in out["tool_calls"]]
    return out


def chat_request(config: dict[str, Any], model: str, tools: list[Tool], temperature: float | None,
                 max_tokens: int | None, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The body of `POST {base_url}/chat/completions`."""
    body: dict[str, Any] = {"model": model, "messages": [chat_message(m) for m in messages]}
    if tools:
        body["tools"] = []
        for tool in tools:
            fn: dict[str, Any] = {"name": tool.name, "parameters": tool.schema}
            if tool.description:
                fn["description"] = tool.description
            body["tools"].append({"type": "function", "function": fn})
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body[config.get("max_tokens_param") or "max_completion_tokens"] = max_tokens
    return body
