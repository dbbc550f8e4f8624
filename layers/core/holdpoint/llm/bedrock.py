"""The `bedrock` provider: one Converse call on `bedrock-runtime`.

`{"provider": "bedrock", "region"?, "price_in"?, "price_out"?, "max_tokens"?, "temperature"?,
"timeout_secs"?}`; the model id is the agent's `model` (or the `llm.call`'s).
"""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from holdpoint.core.outcomes import LlmOutcome
from holdpoint.llm.call import DEFAULT_TIMEOUT_SECS, LlmCall
from holdpoint.llm.converse import converse_request
from holdpoint.llm.errors import from_bedrock
from holdpoint.llm.reply import outcome, tool_call

_CLIENTS: dict[tuple[str | None, float], Any] = {}

# Converse stop reasons of a reply cut short.
_TRUNCATED = ("max_tokens", "model_context_window_exceeded")


def bedrock_client(region: str | None = None, timeout_secs: float = DEFAULT_TIMEOUT_SECS) -> Any:
    """One `bedrock-runtime` client per region and timeout per container (tests stub this one)."""
    key = (region, timeout_secs)
    if key not in _CLIENTS:
        # No SDK retries: a retryable failure surfaces as LlmError(retryable=True) at once, and the
        # engine's LLM retry policy (attempts, backoff) decides what happens next.
        cfg = Config(read_timeout=timeout_secs, connect_timeout=10,
                     retries={"mode": "standard", "total_max_attempts": 1})
        _CLIENTS[key] = boto3.client("bedrock-runtime", region_name=region, config=cfg)
    return _CLIENTS[key]


def _reply(call: LlmCall, prices: tuple[float, float], response: dict[str, Any]) -> LlmOutcome:
    blocks = ((response.get("output") or {}).get("message") or {}).get("content") or []
    texts = [b["text"] for b in blocks if "text" in b]
    calls = [tool_call(call.call_id, i, block.get("toolUseId"), block["name"], json.dumps(block.get("input") or {}))
             for i, block in enumerate(b["toolUse"] for b in blocks if "toolUse" in b)]
    usage = response.get("usage") or {}
    return outcome(prices, "".join(texts) if texts else None, calls, response.get("stopReason") in _TRUNCATED,
                   int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0))


def complete(call: LlmCall) -> LlmOutcome:
    prices = call.prices()
    temperature, max_tokens = call.sampling()
    params = converse_request(call.model(), call.tools(), temperature, max_tokens, call.messages)
    client = bedrock_client(call.config.get("region"), call.timeout())
    try:
        response = client.converse(**params)
    except (ClientError, BotoCoreError) as exc:
        raise from_bedrock(exc) from exc
    return _reply(call, prices, response)
