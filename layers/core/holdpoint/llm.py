"""LLM providers. `scripted` is deterministic and offline, for the demo and tests.

Scripted config: `{"provider": "scripted", "script": [{"when": {"role": "tool", "contains": "sent"},
"reply": {"content": "...", "tool_calls": [{"name": "send_email", "arguments": {...}}]}}]}`.
The first rule whose `when` matches the last message of the prompt answers; a rule without
`when` always matches.
"""

from __future__ import annotations

import json
from typing import Any

from .session import derive


class LlmError(Exception):
    def __init__(self, message: str, code: str = "provider_error") -> None:
        super().__init__(message)
        self.code = code


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _matches(when: dict[str, Any] | None, last: dict[str, Any]) -> bool:
    if not when:
        return True
    if "role" in when and last.get("role") != when["role"]:
        return False
    if "contains" in when and str(when["contains"]).lower() not in _text(last.get("content")).lower():
        return False
    return True


def scripted(config: dict[str, Any], messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    last = messages[-1] if messages else {}
    for rule in config.get("script") or []:
        if _matches(rule.get("when"), last):
            reply = rule.get("reply") or {}
            message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
            calls = []
            for i, tc in enumerate(reply.get("tool_calls") or []):
                args = tc.get("arguments", {})
                calls.append({"id": tc.get("id") or derive("tc", call_id, i), "type": "function",
                              "function": {"name": tc["name"],
                                           "arguments": args if isinstance(args, str) else json.dumps(args)}})
            if calls:
                message["tool_calls"] = calls
            prompt_tokens = sum(len(_text(m.get("content")).split()) for m in messages)
            completion = len(_text(message.get("content")).split()) + 8 * len(calls)
            return {"ok": True, "message": message, "truncated": False,
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion}, "cost": 0.0}
    return {"ok": True, "message": {"role": "assistant", "content": "ok"}, "truncated": False,
            "usage": {"prompt_tokens": 0, "completion_tokens": 1}, "cost": 0.0}


def complete(agent: dict[str, Any] | None, request: dict[str, Any], messages: list[dict[str, Any]],
             call_id: str) -> dict[str, Any]:
    """Run one LLM call; returns an `llm.finished`-shaped outcome (ok, message, usage, error)."""
    config = (agent or {}).get("llm") or {"provider": "scripted"}
    provider = config.get("provider", "scripted")
    if provider == "scripted":
        return scripted(config, messages, call_id)
    return {"ok": False, "error": f"provider {provider!r} is not available in this build",
            "code": "provider_unavailable"}
