"""LLM providers, one module each: `scripted`, `bedrock` (Converse), `openai` (any chat-completions
endpoint). The `worker` provider never reaches this package: its calls are handed to the worker as
`llm.execute`. docs/LLM_PROVIDERS.md documents every block.

Beside the providers: `call` (the effective request every provider reads), `chat` and `converse`
(message translation), `reply` (the recorded reply), `errors` (provider failures as `LlmError`).
Every provider failure raises `LlmError(message, code, retryable)`: `retryable` is True for
throttling, 5xx, timeouts and connection failures, False for requests the provider refused
(validation, auth, unknown model) and for a bad `llm` block.

Each provider also streams (`stream`: Bedrock ConverseStream, chat completions with `stream: true`,
the scripted reply word by word): the same call and outcome, the text handed to `on_delta` as it
arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.outcomes import LlmOutcome, llm_failure
from holdpoint.llm import bedrock, openai, scripted
from holdpoint.llm.bedrock import bedrock_client
from holdpoint.llm.call import DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS, LlmCall, Provider, Streamer, Tool
from holdpoint.llm.chat import chat_message, chat_request
from holdpoint.llm.converse import converse_messages, converse_request
from holdpoint.ports import LlmError, OnDelta, StreamStopped

__all__ = [
    "DEFAULT_TIMEOUT_SECS", "MAX_TIMEOUT_SECS", "PROVIDERS", "STREAMERS", "LlmCall", "LlmError", "Provider",
    "StreamStopped", "Streamer", "Tool", "bedrock", "bedrock_client", "chat_message", "chat_request", "complete",
    "converse_messages", "converse_request", "openai", "scripted", "stream",
]

PROVIDERS: dict[str, Provider] = {"scripted": scripted.complete, "bedrock": bedrock.complete,
                                  "openai": openai.complete}
"""The providers by the `provider` name of an agent's `llm` block."""

STREAMERS: dict[str, Streamer] = {"scripted": scripted.stream, "bedrock": bedrock.stream, "openai": openai.stream}
"""Their streaming entry points, by the same names."""


def _call(agent: JsonObject | None, request: JsonObject, messages: list[JsonObject], call_id: str,
          tenant: str | None) -> tuple[JsonValue, LlmCall]:
    config = (agent or {}).get("llm") or {"provider": "scripted"}
    if not isinstance(config, dict):  # as reading its provider would
        raise AttributeError(f"{type(config).__name__!r} object has no attribute 'get'")
    return config.get("provider", "scripted"), LlmCall(config, agent or {}, request or {}, messages, call_id, tenant)


_T = TypeVar("_T")


def _named(table: Mapping[str, _T], name: JsonValue) -> _T | None:
    """`table.get(name)`: a name that is not a string names nothing; an unhashable one fails as the
    lookup would."""
    if isinstance(name, list | dict):
        raise TypeError(f"unhashable type: {type(name).__name__!r}")
    return table.get(name) if isinstance(name, str) else None


def complete(agent: JsonObject | None, request: JsonObject, messages: list[JsonObject],
             call_id: str, tenant: str | None = None) -> LlmOutcome:
    """Run one LLM call (the `ports.Llm` port); returns an `llm.finished`-shaped outcome (ok,
    message, usage, error). A provider failure raises `LlmError` (its `retryable` says whether
    another attempt may help). `tenant` (the session's) scopes the `llm.api_key` reference."""
    name, call = _call(agent, request, messages, call_id, tenant)
    provider = _named(PROVIDERS, name)
    if provider is None:
        return llm_failure(f"provider {name!r} is not available in this build", "provider_unavailable")
    return provider(call)


def stream(agent: JsonObject | None, request: JsonObject, messages: list[JsonObject], call_id: str,
           tenant: str | None, on_delta: OnDelta) -> LlmOutcome:
    """`complete` (the `ports.LlmStream` port), the reply's text handed to `on_delta` as it arrives;
    `on_delta` answering False stops the call (`StreamStopped`)."""
    name, call = _call(agent, request, messages, call_id, tenant)
    streamer = _named(STREAMERS, name)
    if streamer is None:
        return llm_failure(f"provider {name!r} is not available in this build", "provider_unavailable")
    return streamer(call, on_delta)
