"""LLM providers, one module each: `scripted`, `bedrock` (Converse), `openai` (any chat-completions
endpoint). The `worker` provider never reaches this package: its calls are handed to the worker as
`llm.execute`. docs/LLM_PROVIDERS.md documents every block.

Beside the providers: `call` (the effective request every provider reads), `chat` and `converse`
(message translation), `reply` (the recorded reply), `errors` (provider failures as `LlmError`).
Every provider failure raises `LlmError(message, code, retryable)`: `retryable` is True for
throttling, 5xx, timeouts and connection failures, False for requests the provider refused
(validation, auth, unknown model) and for a bad `llm` block.
"""

from __future__ import annotations

from typing import Any

from holdpoint.core.outcomes import LlmOutcome, llm_failure
from holdpoint.llm import bedrock, openai, scripted
from holdpoint.llm.bedrock import bedrock_client
from holdpoint.llm.call import DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS, LlmCall, Provider, Tool
from holdpoint.llm.chat import chat_message, chat_request
from holdpoint.llm.converse import converse_messages, converse_request
from holdpoint.ports import LlmError

__all__ = [
    "DEFAULT_TIMEOUT_SECS", "MAX_TIMEOUT_SECS", "PROVIDERS", "LlmCall", "LlmError", "Provider", "Tool",
    "bedrock", "bedrock_client", "chat_message", "chat_request", "complete", "converse_messages",
    "converse_request", "openai", "scripted",
]

PROVIDERS: dict[str, Provider] = {"scripted": scripted.complete, "bedrock": bedrock.complete,
                                  "openai": openai.complete}
"""The providers by the `provider` name of an agent's `llm` block."""


def complete(agent: dict[str, Any] | None, request: dict[str, Any], messages: list[dict[str, Any]],
             call_id: str, tenant: str | None = None) -> LlmOutcome:
    """Run one LLM call (the `ports.Llm` port); returns an `llm.finished`-shaped outcome (ok,
    message, usage, error). A provider failure raises `LlmError` (its `retryable` says whether
    another attempt may help). `tenant` (the session's) scopes the `llm.api_key` reference."""
    config = (agent or {}).get("llm") or {"provider": "scripted"}
    name = config.get("provider", "scripted")
    provider = PROVIDERS.get(name)
    if provider is None:
        return llm_failure(f"provider {name!r} is not available in this build", "provider_unavailable")
    return provider(LlmCall(config, agent or {}, request or {}, messages, call_id, tenant))
