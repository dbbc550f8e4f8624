"""The `bedrock` provider: one Converse call on `bedrock-runtime` (`complete`), or one ConverseStream
call (`stream`, `bedrock:InvokeModelWithResponseStream`) whose events are gathered into the reply
Converse would have answered.

`{"provider": "bedrock", "region"?, "price_in"?, "price_out"?, "max_tokens"?, "temperature"?,
"timeout_secs"?}`; the model id is the agent's `model` (or the `llm.call`'s).
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from holdpoint.aws import clients
from holdpoint.aws.errors import SdkFailure
from holdpoint.core.outcomes import LlmOutcome
from holdpoint.llm.call import DEFAULT_TIMEOUT_SECS, LlmCall, hand_over
from holdpoint.llm.converse import ConverseParams, converse_request
from holdpoint.llm.errors import from_bedrock
from holdpoint.llm.reply import outcome, tool_call
from holdpoint.ports import LlmError, OnDelta

_CLIENTS: dict[tuple[str | None, float], Any] = {}

# Converse stop reasons of a reply cut short.
_TRUNCATED = ("max_tokens", "model_context_window_exceeded")


def bedrock_client(region: str | None = None, timeout_secs: float = DEFAULT_TIMEOUT_SECS) -> Any:
    """One `bedrock-runtime` client per region and timeout per container (tests stub this one)."""
    key = (region, timeout_secs)
    if key not in _CLIENTS:
        # No SDK retries (clients.POLICIES): a retryable failure surfaces as LlmError(retryable=True) at
        # once, and the engine's LLM retry policy (attempts, backoff) decides what happens next.
        _CLIENTS[key] = clients.sdk("bedrock-runtime", region=region, read=timeout_secs)
    return _CLIENTS[key]


class ResponseToolUse(TypedDict, total=False):
    toolUseId: str
    name: str
    input: Any
    """The tool's arguments as the model gave them (an object, when the model keeps to its schema)."""


class ResponseBlock(TypedDict, total=False):
    """A content block of Converse's reply: its text or a tool use."""

    text: str
    toolUse: ResponseToolUse


class ResponseMessage(TypedDict, total=False):
    role: str
    content: list[ResponseBlock]


class Output(TypedDict, total=False):
    message: ResponseMessage


class Usage(TypedDict, total=False):
    inputTokens: int
    outputTokens: int


class ConverseResponse(TypedDict, total=False):
    """The part of Converse's response a reply is read from (ConverseStream's events gathered
    into the same shape)."""

    output: Output
    stopReason: str | None
    usage: Usage


def _reply(call: LlmCall, prices: tuple[float, float], response: ConverseResponse) -> LlmOutcome:
    output: Output = response.get("output") or {}
    message: ResponseMessage = output.get("message") or {}
    blocks = message.get("content") or []
    texts = [b["text"] for b in blocks if "text" in b]
    calls = [tool_call(call.call_id, i, block.get("toolUseId"), block["name"], json.dumps(block.get("input") or {}))
             for i, block in enumerate(b["toolUse"] for b in blocks if "toolUse" in b)]
    usage: Usage = response.get("usage") or {}
    return outcome(prices, "".join(texts) if texts else None, calls, response.get("stopReason") in _TRUNCATED,
                   int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0))


def _request(call: LlmCall) -> tuple[tuple[float, float], ConverseParams, Any]:
    prices = call.prices()
    temperature, max_tokens = call.sampling()
    params = converse_request(call.model(), call.tools(), temperature, max_tokens, call.messages)
    return prices, params, bedrock_client(call.config.get("region"), call.timeout())


def complete(call: LlmCall) -> LlmOutcome:
    prices, params, client = _request(call)
    try:
        with clients.sdk_failures():
            response = client.converse(**params)
    except SdkFailure as exc:
        raise from_bedrock(exc) from exc
    return _reply(call, prices, response)


class _Gathered:
    """ConverseStream's events as Converse's response: content blocks by index, stop reason, usage."""

    def __init__(self) -> None:
        self.blocks: dict[int, ResponseBlock] = {}
        self.tool_inputs: dict[int, str] = {}
        self.stop: str | None = None
        self.usage: Usage = {}

    def take(self, event: dict[str, Any], on_delta: OnDelta) -> None:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = (start.get("start") or {}).get("toolUse")
            if use:
                self.blocks[start["contentBlockIndex"]] = {"toolUse": {"toolUseId": use.get("toolUseId"),
                                                                       "name": use.get("name")}}
        elif "contentBlockDelta" in event:
            index, delta = event["contentBlockDelta"]["contentBlockIndex"], event["contentBlockDelta"]["delta"]
            if "text" in delta:
                block = self.blocks.setdefault(index, {"text": ""})
                block["text"] = block.get("text", "") + delta["text"]
                hand_over(on_delta, delta["text"])
            elif "toolUse" in delta:
                self.tool_inputs[index] = self.tool_inputs.get(index, "") + (delta["toolUse"].get("input") or "")
        elif "messageStop" in event:
            self.stop = event["messageStop"].get("stopReason")
        elif "metadata" in event:
            self.usage = event["metadata"].get("usage") or Usage()

    def response(self) -> ConverseResponse:
        for index, raw in self.tool_inputs.items():
            try:
                self.blocks.setdefault(index, {"toolUse": {}})["toolUse"]["input"] = json.loads(raw) if raw else {}
            except ValueError as exc:
                raise LlmError("bedrock streamed a tool call whose input is not JSON", "bad_response") from exc
        content = [self.blocks[i] for i in sorted(self.blocks)]
        return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": self.stop,
                "usage": self.usage}


def stream(call: LlmCall, on_delta: OnDelta) -> LlmOutcome:
    """ConverseStream: each text delta to `on_delta` as it arrives; a stop closes the response stream."""
    prices, params, client = _request(call)
    gathered = _Gathered()
    try:
        with clients.sdk_failures():
            events = client.converse_stream(**params)["stream"]
            try:
                for event in events:
                    gathered.take(event, on_delta)
            finally:
                events.close()
    except SdkFailure as exc:
        raise from_bedrock(exc) from exc
    return _reply(call, prices, gathered.response())
