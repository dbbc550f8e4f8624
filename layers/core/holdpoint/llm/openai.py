"""The `openai` provider: one `POST {base_url}/chat/completions` to any OpenAI-compatible endpoint,
through the network guard; `stream` asks for `stream: true` and gathers the server-sent chunks
into the reply the endpoint would have answered whole.

`{"provider": "openai", "base_url": "https://host/v1", "api_key"?: "env:NAME" | "secretsmanager:NAME",
"price_in"?, "price_out"?, "max_tokens"?, "temperature"?, "timeout_secs"?, "max_tokens_param"?}`.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any, TypedDict

from holdpoint.aws import secretrefs
from holdpoint.aws.errors import SecretRefError
from holdpoint.core import strictjson
from holdpoint.core.errors import JsonProblem
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.outcomes import LlmOutcome
from holdpoint.llm.call import LlmCall, hand_over
from holdpoint.llm.chat import arguments_json, chat_request, text
from holdpoint.llm.errors import from_http, from_network
from holdpoint.llm.reply import outcome, tool_call
from holdpoint.outbound import netguard
from holdpoint.outbound.errors import AddressRefused
from holdpoint.ports import LlmError, OnDelta


def _base_url(config: Mapping[str, object]) -> str:
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
    except SecretRefError as exc:
        raise LlmError(str(exc), "config_error") from exc
    except Exception as exc:  # Secrets Manager unreachable or throttled: try again later
        raise LlmError(f"llm.api_key could not be read: {exc}", "secret_unavailable", retryable=True) from exc


@contextlib.contextmanager
def _opened(url: str, body: JsonObject, key: str | None, timeout: float, accept: str) -> Iterator[Any]:
    """The endpoint's answer, open; a failure to reach it, or to read it, as `LlmError`."""
    headers = {"Content-Type": "application/json", "Accept": accept}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with netguard.urlopen(req, "llm.base_url", timeout) as resp:
            yield resp
    except AddressRefused as exc:
        raise LlmError(str(exc), "config_error") from exc
    except urllib.error.HTTPError as exc:
        raise from_http(exc) from exc
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        raise from_network(exc) from exc


def _post(url: str, body: JsonObject, key: str | None, timeout: float) -> bytes:
    with _opened(url, body, key, timeout, "application/json") as resp:
        raw: bytes = resp.read()
        return raw


def _json(raw: bytes) -> Any:
    try:
        return strictjson.loads(raw)
    except JsonProblem as exc:
        raise LlmError("llm endpoint answered something that is not JSON", "bad_response") from exc


def _reply(call: LlmCall, prices: tuple[float, float], raw: bytes) -> LlmOutcome:
    return _answer(call, prices, _json(raw))


def _answer(call: LlmCall, prices: tuple[float, float], data: Any) -> LlmOutcome:
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


def _request(call: LlmCall) -> tuple[str, tuple[float, float], JsonObject]:
    url = _base_url(call.config) + "/chat/completions"
    prices = call.prices()
    temperature, max_tokens = call.sampling()
    return url, prices, chat_request(call.config, call.model(), call.tools(), temperature, max_tokens, call.messages)


def complete(call: LlmCall) -> LlmOutcome:
    url, prices, body = _request(call)
    raw = _post(url, body, _api_key(call.config, call.tenant), call.timeout())
    return _reply(call, prices, raw)


class _PartialCall(TypedDict):
    """A streamed tool call, gathered by its index: the chunks' id and name, the arguments' text."""

    id: JsonValue
    name: JsonValue
    arguments: str


class _Gathered:
    """Chat-completion chunks as the whole completion: content, tool calls by index, finish, usage."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish: str | None = None
        self.usage: JsonObject = {}
        self.chunks = 0

    def take(self, chunk: Any, on_delta: OnDelta) -> None:
        if not isinstance(chunk, dict):
            raise LlmError("llm endpoint streamed a chunk that is not an object", "bad_response")
        if isinstance(chunk.get("error"), dict | str):
            err = chunk["error"]
            why = err.get("message") if isinstance(err, dict) else err
            raise LlmError(f"llm endpoint failed mid-stream: {why}", "provider_unavailable", retryable=True)
        self.chunks += 1
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            self.finish = choice.get("finish_reason") or self.finish
            delta = choice.get("delta") or {}
            for tc in delta.get("tool_calls") or []:
                self._tool_call(tc)
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.content.append(piece)
                hand_over(on_delta, piece)

    def _tool_call(self, tc: dict[str, Any]) -> None:
        entry = self.calls.setdefault(int(tc.get("index") or 0), {"id": None, "name": None, "arguments": ""})
        fn = tc.get("function") or {}
        entry["id"] = tc.get("id") or entry["id"]
        entry["name"] = fn.get("name") or entry["name"]
        entry["arguments"] += fn.get("arguments") or ""

    def completion(self) -> JsonObject:
        if not self.chunks:
            raise LlmError("llm endpoint streamed no chunks", "bad_response")
        calls: list[JsonValue] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(self.calls.items())]
        message: JsonObject = {"role": "assistant", "content": "".join(self.content) if self.content else None}
        if calls:
            message["tool_calls"] = calls
        return {"choices": [{"message": message, "finish_reason": self.finish}], "usage": self.usage}


def _events(resp: Any) -> Iterator[bytes]:
    """The `data:` payloads of a server-sent event stream, up to `[DONE]`."""
    for line in resp:
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            return
        yield data


def stream(call: LlmCall, on_delta: OnDelta) -> LlmOutcome:
    """`stream: true` (usage asked for in the last chunk): each content delta to `on_delta` as it
    arrives; a stop closes the connection."""
    url, prices, body = _request(call)
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    gathered = _Gathered()
    with _opened(url, body, _api_key(call.config, call.tenant), call.timeout(), "text/event-stream") as resp:
        for data in _events(resp):
            gathered.take(_json(data), on_delta)
    return _answer(call, prices, gathered.completion())
