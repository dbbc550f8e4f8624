"""A provider's reply as the engine records it: an assistant message in the chat shape, with
tool calls given stable ids, its usage and its cost."""

from __future__ import annotations

from holdpoint.core.budget import token_cost
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.outcomes import LlmOutcome, llm_reply
from holdpoint.core.state import derive


def tool_call(call_id: str, index: int, tool_id: JsonValue, name: JsonValue, arguments: str) -> JsonObject:
    """One tool call of the reply; a provider that gave it no id gets one derived from the call,
    so a redelivered reply names its calls the same way."""
    return {"id": tool_id or derive("tc", call_id, index), "type": "function",
            "function": {"name": name, "arguments": arguments}}


def outcome(prices: tuple[float, float], content: str | None, calls: list[JsonObject], truncated: bool,
            prompt_tokens: int, completion_tokens: int) -> LlmOutcome:
    message: JsonObject = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [*calls]
    return llm_reply(message, usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
                     cost=token_cost(prompt_tokens, completion_tokens, *prices), truncated=truncated)
