"""The `openai` provider: one `POST {base_url}/chat/completions` to any OpenAI-compatible endpoint,
through the network guard.

`{"provider": "openai", "base_url": "https://host/v1", "api_key"?: "env:NAME" | "secretsmanager:NAME",
"price_in"?, "price_out"?, "max_tokens"?, "temperature"?, "timeout_secs"?, "max_tokens_param"?}`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from holdpoint.aws import secretrefs
from holdpoint.core import strictjson
from holdpoint.core.outcomes import LlmOutcome
from holdpoint.llm.call import LlmCall
from holdpoint.llm.chat import arguments_json, chat_request, text
from holdpoint.llm.errors import from_http, from_network
from holdpoint.llm.reply import outcome, tool_call
from holdpoint.outbound import netguard
from holdpoint.ports import LlmError


def _base_url(config: dict[str, Any]) -> str:
    """The endpoint's base; `netguard.urlopen` checks it (and the connected address) on the call."""
    base = config.get("base_url")
    if not base or not isinstance(base, str):
        raise LlmError("llm.base_url is required for the openai provider", "config_error")
    return base.rstrip("/")


def _api_key(config: dict[str, Any], tenant: str | None) -> str | None:
    ref = config.get("api_key")
    if ref is None:
        return None
    try:
        return secretrefs.resolve(ref, tenant, "llm.api_key")
    except secretrefs.SecretRefError as exc:
        raise LlmError(str(exc), "config_error") from exc
    except Exception as exc:  # Secrets Manager unreachable or throttled: try again later
        raise LlmError(f"llm.api_key could not be read: {exc}", "secret_unavailable", retryable=True) from exc


def _post(url: str, body: dict[str, Any], key: str | None, timeout: float) -> bytes:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with netguard.urlopen(req, "llm.base_url", timeout) as resp:
            raw: bytes = resp.read()
            return raw
    except netguard.Refused as exc:
        raise LlmError(str(exc), "config_error") from exc
    except urllib.error.HTTPError as exc:
        raise from_http(exc) from exc
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        raise from_network(exc) from exc


def _reply(call: LlmCall, prices: tuple[float, float], raw: bytes) -> LlmOutcome:
    try:
        data = strictjson.loads(raw)
    except strictjson.JsonProblem as exc:
        raise LlmError("llm endpoint answered something that is not JSON", "bad_response") from exc
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict):
        err = data.get("error") if isinstance(data, dict) else None
        why = err.get("message") if isinstance(err, dict) else err
        raise LlmError(f"llm endpoint answered no choices{': ' + str(why) if why else ''}", "bad_response")
    choice = choices[0]
    reply = choice.get("message") or {}
    calls = [tool_call(call.call_id, i, tc.get("id"), (tc.get("function") or {}).get("name"),
                       arguments_json((tc.get("function") or {}).get("arguments")))
             for i, tc in enumerate(reply.get("tool_calls") or [])]
    usage = data.get("usage") or {}
    content = reply.get("content")
    if isinstance(content, list):
        content = text(content)
    return outcome(prices, content, calls, choice.get("finish_reason") == "length",
                   int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def complete(call: LlmCall) -> LlmOutcome:
    url = _base_url(call.config) + "/chat/completions"
    prices = call.prices()
    temperature, max_tokens = call.sampling()
    body = chat_request(call.config, call.model(), call.tools(), temperature, max_tokens, call.messages)
    raw = _post(url, body, _api_key(call.config, call.tenant), call.timeout())
    return _reply(call, prices, raw)
