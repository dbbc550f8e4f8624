"""LLM providers: `scripted`, `bedrock`, `openai` (the `worker` provider never reaches this module:
its calls are handed to the worker as `llm.execute`). docs/LLM_PROVIDERS.md documents every block.

Scripted config: `{"provider": "scripted", "script": [{"when": {"role": "tool", "contains": "sent"},
"reply": {"content": "...", "tool_calls": [{"name": "send_email", "arguments": {...}}]}}]}`.
The first rule whose `when` matches the last message of the prompt answers; a rule without
`when` always matches.

Bedrock config: `{"provider": "bedrock", "region"?, "price_in"?, "price_out"?, "max_tokens"?,
"temperature"?, "timeout_secs"?}`; the model id is the agent's `model` (or the `llm.call`'s).

OpenAI config: `{"provider": "openai", "base_url": "https://host/v1", "api_key"?: "env:NAME" |
"secretsmanager:NAME", "price_in"?, "price_out"?, "max_tokens"?, "temperature"?, "timeout_secs"?,
"max_tokens_param"?}`.

Every provider failure raises `LlmError(message, code, retryable)`: `retryable` is True for
throttling, 5xx, timeouts and connection failures (worth another attempt), False for requests
the provider refused (validation, auth, unknown model) and for a bad `llm` block.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from holdpoint.aws import secretrefs
from holdpoint.core import strictjson
from holdpoint.core.budget import token_cost
from holdpoint.core.outcomes import LlmOutcome, llm_failure, llm_reply
from holdpoint.core.state import derive
from holdpoint.outbound import netguard
from holdpoint.ports import LlmError


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


def scripted(config: dict[str, Any], messages: list[dict[str, Any]], call_id: str) -> LlmOutcome:
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
            return llm_reply(message, usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion},
                             cost=0.0)
    return llm_reply({"role": "assistant", "content": "ok"}, usage={"prompt_tokens": 0, "completion_tokens": 1},
                     cost=0.0)


# --- shared: the effective request ------------------------------------------------------

DEFAULT_TIMEOUT_SECS = 60.0
# One provider request must fit in one engine invocation (Lambda timeout 100 s, below the work
# queue's 120 s visibility timeout), so `timeout_secs` is capped; retries are the engine's job.
MAX_TIMEOUT_SECS = 90.0


def _timeout(config: dict[str, Any]) -> float:
    try:
        value = float(config.get("timeout_secs") or DEFAULT_TIMEOUT_SECS)
    except (TypeError, ValueError) as exc:
        raise LlmError("llm.timeout_secs must be a number of seconds", "config_error") from exc
    if not value > 0:
        raise LlmError("llm.timeout_secs must be positive", "config_error")
    return min(value, MAX_TIMEOUT_SECS)


def _model(agent: dict[str, Any], request: dict[str, Any], config: dict[str, Any]) -> str:
    model = request.get("model") or agent.get("model") or config.get("model")
    if not model or not isinstance(model, str):
        raise LlmError("no model: set the agent's `model` (or `model` on the llm.call)", "config_error")
    return model


def _tools(agent: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools offered, as `{name, description?, schema}`: the `llm.call`'s own list when it has
    one (agent-style `{name, description, input}` or OpenAI-style `{type: function, function}`),
    else the agent's."""
    raw = request.get("tools")
    if raw is None:
        raw = agent.get("tools") or []
    out = []
    for tool in raw:
        if not isinstance(tool, dict):
            raise LlmError("a tool must be an object", "invalid_request")
        function = tool.get("function")
        spec: dict[str, Any] = function if isinstance(function, dict) else tool
        name = spec.get("name")
        if not name:
            raise LlmError("a tool has no name", "invalid_request")
        schema = spec.get("input") or spec.get("parameters") or spec.get("input_schema")
        out.append({"name": name, "description": spec.get("description"),
                    "schema": schema if isinstance(schema, dict) else {"type": "object", "properties": {}}})
    return out


def _sampling(request: dict[str, Any], config: dict[str, Any]) -> tuple[float | None, int | None]:
    """Temperature and the output-token cap: the `llm.call`'s, else the llm block's, else unset."""
    temperature = request.get("temperature")
    if temperature is None:
        temperature = config.get("temperature")
    max_tokens = request.get("max_completion_tokens")
    if max_tokens is None:
        max_tokens = config.get("max_tokens")
    try:
        return (None if temperature is None else float(temperature),
                None if max_tokens is None else int(max_tokens))
    except (TypeError, ValueError) as exc:
        raise LlmError("temperature must be a number and max_completion_tokens an integer",
                       "invalid_request") from exc


def _prices(config: dict[str, Any]) -> tuple[float, float]:
    """`price_in` / `price_out`: prices per 1,000 input / output tokens; absent means free.
    Checked before the call, so a typo never costs a paid reply."""
    try:
        return float(config.get("price_in") or 0), float(config.get("price_out") or 0)
    except (TypeError, ValueError) as exc:
        raise LlmError("llm.price_in / llm.price_out must be numbers (price per 1,000 tokens)",
                       "config_error") from exc


def _arguments_json(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {})


def _outcome(prices: tuple[float, float], content: str | None, calls: list[dict[str, Any]], truncated: bool,
             prompt_tokens: int, completion_tokens: int) -> LlmOutcome:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return llm_reply(message, usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
                     cost=token_cost(prompt_tokens, completion_tokens, *prices), truncated=truncated)


# --- bedrock (Converse) -------------------------------------------------------------------

_BEDROCK_CLIENTS: dict[tuple[str | None, float], Any] = {}

# Converse error codes worth another attempt; everything else (ValidationException,
# AccessDeniedException, ResourceNotFoundException, ModelErrorException, ...) is final.
_BEDROCK_RETRYABLE = {
    "ThrottlingException": "throttled",
    "TooManyRequestsException": "throttled",
    "ServiceQuotaExceededException": "throttled",
    "ServiceUnavailableException": "provider_unavailable",
    "InternalServerException": "provider_unavailable",
    "ModelNotReadyException": "provider_unavailable",
    "ModelTimeoutException": "timeout",
}


def bedrock_client(region: str | None = None, timeout_secs: float = DEFAULT_TIMEOUT_SECS) -> Any:
    """One `bedrock-runtime` client per region and timeout per container (tests stub this one)."""
    key = (region, timeout_secs)
    if key not in _BEDROCK_CLIENTS:
        # No SDK retries: a retryable failure surfaces as LlmError(retryable=True) at once, and the
        # engine's LLM retry policy (attempts, backoff) decides what happens next.
        cfg = Config(read_timeout=timeout_secs, connect_timeout=10,
                     retries={"mode": "standard", "total_max_attempts": 1})
        _BEDROCK_CLIENTS[key] = boto3.client("bedrock-runtime", region_name=region, config=cfg)
    return _BEDROCK_CLIENTS[key]


def _image_block(part: dict[str, Any]) -> dict[str, Any]:
    image = part.get("image_url")
    url = str((image.get("url") if isinstance(image, dict) else image) or "")
    head, sep, data = url.partition(",")
    if not (url.startswith("data:image/") and sep and head.endswith(";base64")):
        raise LlmError("bedrock takes images only as data:image/...;base64 URLs", "invalid_request")
    fmt = head[len("data:image/"):-len(";base64")]
    fmt = "jpeg" if fmt == "jpg" else fmt
    return {"image": {"format": fmt, "source": {"bytes": base64.b64decode(data)}}}


def _bedrock_blocks(content: Any) -> list[dict[str, Any]]:
    """Chat content (string or parts) as Converse content blocks; empty text is dropped
    (Converse rejects blank text blocks)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    if isinstance(content, dict):
        return [{"text": json.dumps(content)}]
    blocks = []
    for part in content:
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        kind = part.get("type", "text") if isinstance(part, dict) else None
        if kind == "text":
            text = str(part.get("text") or "")
            if text.strip():
                blocks.append({"text": text})
        elif kind == "image_url":
            blocks.append(_image_block(part))
        else:
            raise LlmError(f"bedrock cannot send a {kind!r} content part", "invalid_request")
    return blocks


def _tool_input(arguments: Any) -> dict[str, Any]:
    """Assistant tool-call arguments (a JSON string) as a toolUse `input` object; arguments that
    are not a JSON object (a model's malformed call) are kept verbatim under `raw`."""
    if isinstance(arguments, dict):
        return arguments
    if arguments in (None, ""):
        return {}
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return {"raw": str(arguments)}
    return value if isinstance(value, dict) else {"raw": arguments}


_TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_.:-]{1,64}$")


def _tool_use_id(call_id: Any) -> str:
    """Converse wants toolUseIds of 1-64 `[a-zA-Z0-9_.:-]`; an id from elsewhere (a client, another
    provider) that is not one is replaced by a stable digest, the same for the call and its result."""
    value = str(call_id or "")
    return value if _TOOL_USE_ID.match(value) else derive("tu", value)


def converse_messages(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Chat messages as Converse `(system, messages)`: every system message (wherever it stands)
    goes to `system`; a tool message becomes a `toolResult` block in a user turn; assistant
    tool_calls become `toolUse` blocks; consecutive turns of one role merge into one, as Converse
    requires alternating roles; a message left with no content is skipped."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "system":
            text = _text(m.get("content"))
            if text.strip():
                system.append({"text": text})
            continue
        if role == "tool":
            content = m.get("content")
            text = json.dumps(content) if isinstance(content, dict) else _text(content)
            result: dict[str, Any] = {"toolUseId": _tool_use_id(m.get("tool_call_id")),
                                      "content": [{"text": text}] if text.strip() else []}
            turn_role, blocks = "user", [{"toolResult": result}]
        elif role == "assistant":
            turn_role, blocks = "assistant", _bedrock_blocks(m.get("content"))
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                blocks.append({"toolUse": {"toolUseId": _tool_use_id(tc.get("id")), "name": fn.get("name"),
                                           "input": _tool_input(fn.get("arguments"))}})
        elif role == "user":
            turn_role, blocks = "user", _bedrock_blocks(m.get("content"))
        else:
            raise LlmError(f"unknown message role {role!r}", "invalid_request")
        if not blocks:
            continue
        if out and out[-1]["role"] == turn_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": turn_role, "content": blocks})
    return system, out


def _history_tool_names(turns: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for turn in turns:
        for block in turn["content"]:
            name = (block.get("toolUse") or {}).get("name")
            if name and name not in names:
                names.append(name)
    return names


def converse_request(model: str, tools: list[dict[str, Any]], temperature: float | None,
                     max_tokens: int | None, messages: list[dict[str, Any]]) -> dict[str, Any]:
    system, turns = converse_messages(messages)
    params: dict[str, Any] = {"modelId": model, "messages": turns}
    if system:
        params["system"] = system
    inference: dict[str, Any] = {}
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if temperature is not None:
        inference["temperature"] = temperature
    if inference:
        params["inferenceConfig"] = inference
    specs = []
    for tool in tools:
        spec: dict[str, Any] = {"name": tool["name"], "inputSchema": {"json": tool["schema"]}}
        if tool.get("description"):
            spec["description"] = tool["description"]
        specs.append({"toolSpec": spec})
    # Converse refuses toolUse/toolResult blocks without a toolConfig: when the tools were
    # withdrawn mid-conversation, declare the ones the history used, with an open schema.
    declared = {t["name"] for t in tools}
    for name in _history_tool_names(turns):
        if name not in declared:
            specs.append({"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}})
    if not specs and any("toolResult" in b for t in turns for b in t["content"]):
        raise LlmError("tool results in the prompt but no tool is declared", "invalid_request")
    if specs:
        params["toolConfig"] = {"tools": specs}
    return params


def _bedrock_error(exc: ClientError | BotoCoreError) -> LlmError:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error") or {}
        code = err.get("Code") or "ClientError"
        status = (exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0
        message = f"bedrock {code}: {err.get('Message') or exc}"
        if code in _BEDROCK_RETRYABLE:
            return LlmError(message, _BEDROCK_RETRYABLE[code], retryable=True)
        if status == 429:
            return LlmError(message, "throttled", retryable=True)
        if status >= 500:
            return LlmError(message, "provider_unavailable", retryable=True)
        if code == "AccessDeniedException" or status in (401, 403):
            return LlmError(message, "auth_error")
        if code == "ResourceNotFoundException" or status == 404:
            return LlmError(message, "model_not_found")
        return LlmError(message, "invalid_request")
    if isinstance(exc, ReadTimeoutError):
        return LlmError(f"bedrock timed out: {exc}", "timeout", retryable=True)
    if isinstance(exc, NoCredentialsError):
        return LlmError(f"bedrock: {exc}", "auth_error")
    if isinstance(exc, BotoConnectionError):
        return LlmError(f"bedrock unreachable: {exc}", "provider_unavailable", retryable=True)
    return LlmError(f"bedrock: {exc}", "provider_error")


def bedrock(config: dict[str, Any], agent: dict[str, Any], request: dict[str, Any],
            messages: list[dict[str, Any]], call_id: str, tenant: str | None = None) -> LlmOutcome:
    prices = _prices(config)
    temperature, max_tokens = _sampling(request, config)
    params = converse_request(_model(agent, request, config), _tools(agent, request), temperature, max_tokens,
                              messages)
    client = bedrock_client(config.get("region"), _timeout(config))
    try:
        response = client.converse(**params)
    except (ClientError, BotoCoreError) as exc:
        raise _bedrock_error(exc) from exc
    blocks = ((response.get("output") or {}).get("message") or {}).get("content") or []
    texts = [b["text"] for b in blocks if "text" in b]
    calls = []
    for i, block in enumerate(b["toolUse"] for b in blocks if "toolUse" in b):
        calls.append({"id": block.get("toolUseId") or derive("tc", call_id, i), "type": "function",
                      "function": {"name": block["name"], "arguments": json.dumps(block.get("input") or {})}})
    usage = response.get("usage") or {}
    truncated = response.get("stopReason") in ("max_tokens", "model_context_window_exceeded")
    return _outcome(prices, "".join(texts) if texts else None, calls, truncated,
                    int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0))


# --- openai (any chat-completions endpoint) ---------------------------------------------------

_CHAT_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")


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
                                           "arguments": _arguments_json((tc.get("function") or {}).get("arguments"))}}
                             for tc in out["tool_calls"]]
    return out


def chat_request(config: dict[str, Any], model: str, tools: list[dict[str, Any]], temperature: float | None,
                 max_tokens: int | None, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [chat_message(m) for m in messages]}
    if tools:
        body["tools"] = []
        for tool in tools:
            fn: dict[str, Any] = {"name": tool["name"], "parameters": tool["schema"]}
            if tool.get("description"):
                fn["description"] = tool["description"]
            body["tools"].append({"type": "function", "function": fn})
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body[config.get("max_tokens_param") or "max_completion_tokens"] = max_tokens
    return body


def _http_error(exc: urllib.error.HTTPError) -> LlmError:
    try:
        detail = json.loads(exc.read() or b"{}")
        err = detail.get("error") if isinstance(detail, dict) else None
        why = err.get("message") if isinstance(err, dict) else (err if isinstance(err, str) else None)
    except (ValueError, OSError):
        why = None
    message = f"llm endpoint answered HTTP {exc.code}" + (f": {why}" if why else "")
    if exc.code == 429:
        return LlmError(message, "throttled", retryable=True)
    if exc.code >= 500 or exc.code == 408:
        return LlmError(message, "provider_unavailable", retryable=True)
    if exc.code in (401, 403):
        return LlmError(message, "auth_error")
    if exc.code == 404:
        return LlmError(message, "model_not_found")
    return LlmError(message, "invalid_request")


def openai(config: dict[str, Any], agent: dict[str, Any], request: dict[str, Any],
           messages: list[dict[str, Any]], call_id: str, tenant: str | None = None) -> LlmOutcome:
    url = _base_url(config) + "/chat/completions"
    prices = _prices(config)
    temperature, max_tokens = _sampling(request, config)
    body = chat_request(config, _model(agent, request, config), _tools(agent, request), temperature, max_tokens,
                        messages)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = _api_key(config, tenant)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with netguard.urlopen(req, "llm.base_url", _timeout(config)) as resp:
            raw = resp.read()
    except netguard.Refused as exc:
        raise LlmError(str(exc), "config_error") from exc
    except urllib.error.HTTPError as exc:
        raise _http_error(exc) from exc
    except (TimeoutError, urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        code = "timeout" if isinstance(reason, TimeoutError) or "timed out" in str(reason) else "provider_unavailable"
        raise LlmError(f"llm endpoint unreachable: {reason}", code, retryable=True) from exc
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
    calls = []
    for i, tc in enumerate(reply.get("tool_calls") or []):
        fn = tc.get("function") or {}
        calls.append({"id": tc.get("id") or derive("tc", call_id, i), "type": "function",
                      "function": {"name": fn.get("name"), "arguments": _arguments_json(fn.get("arguments"))}})
    usage = data.get("usage") or {}
    content = reply.get("content")
    if isinstance(content, list):
        content = _text(content)
    return _outcome(prices, content, calls, choice.get("finish_reason") == "length",
                    int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


# --- entry point ------------------------------------------------------------------------------

_PROVIDERS = {"bedrock": bedrock, "openai": openai}


def complete(agent: dict[str, Any] | None, request: dict[str, Any], messages: list[dict[str, Any]],
             call_id: str, tenant: str | None = None) -> LlmOutcome:
    """Run one LLM call; returns an `llm.finished`-shaped outcome (ok, message, usage, error).
    A provider failure raises `LlmError` (its `retryable` says whether another attempt may help).
    `tenant` (the session's) scopes the `llm.api_key` reference."""
    config = (agent or {}).get("llm") or {"provider": "scripted"}
    provider = config.get("provider", "scripted")
    if provider == "scripted":
        return scripted(config, messages, call_id)
    if provider in _PROVIDERS:
        return _PROVIDERS[provider](config, agent or {}, request or {}, messages, call_id, tenant)
    return llm_failure(f"provider {provider!r} is not available in this build", "provider_unavailable")
