"""One LLM call and its effective request: what every provider reads from the agent's `llm` block,
the agent and the `llm.call` (model, tools, sampling, prices, timeout), each checked before the
provider is asked, so a bad block never costs a paid reply.

A provider is a function from an `LlmCall` to an `llm.finished`-shaped outcome (`Provider`), and
its `stream(call, on_delta)` (`Streamer`) is the same call with the reply's text handed to
`on_delta` piece by piece as it arrives; the outcome is the same whole reply. `on_delta`
answering False stops the stream: the provider stops reading and raises `StreamStopped`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.outcomes import LlmOutcome
from holdpoint.ports import LlmError, OnDelta, StreamStopped

DEFAULT_TIMEOUT_SECS = 60.0
# One provider request must fit in one engine invocation (Lambda timeout 100 s, below the work
# queue's 120 s visibility timeout), so `timeout_secs` is capped; retries are the engine's job.
MAX_TIMEOUT_SECS = 90.0


@dataclass(frozen=True)
class Tool:
    """A tool offered to the model, in the one shape every provider translates from."""

    name: str
    description: str | None
    schema: JsonObject
    """The tool's input JSON Schema."""


@dataclass(frozen=True)
class LlmCall:
    """The inputs of one call: the agent's `llm` block (`config`), the agent, the `llm.call`'s
    request, the prompt, the call id (stable ids for tool calls) and the session's tenant (which
    scopes secret references)."""

    config: dict[str, Any]
    agent: JsonObject = field(default_factory=dict)
    request: JsonObject = field(default_factory=dict)
    messages: list[JsonObject] = field(default_factory=list)
    call_id: str = ""
    tenant: str | None = None

    def timeout(self) -> float:
        try:
            value = float(self.config.get("timeout_secs") or DEFAULT_TIMEOUT_SECS)
        except (TypeError, ValueError) as exc:
            raise LlmError("llm.timeout_secs must be a number of seconds", "config_error") from exc
        if not value > 0:
            raise LlmError("llm.timeout_secs must be positive", "config_error")
        return min(value, MAX_TIMEOUT_SECS)

    def model(self) -> str:
        model = self.request.get("model") or self.agent.get("model") or self.config.get("model")
        if not model or not isinstance(model, str):
            raise LlmError("no model: set the agent's `model` (or `model` on the llm.call)", "config_error")
        return model

    def tools(self) -> list[Tool]:
        """The `llm.call`'s own list when it has one (agent-style `{name, description, input}` or
        OpenAI-style `{type: function, function}`), else the agent's."""
        raw = self.request.get("tools")
        if raw is None:
            raw = self.agent.get("tools") or []
        if isinstance(raw, list):
            entries = raw
        elif isinstance(raw, str | dict):  # its characters or keys: not one of them is a tool object
            entries = [*raw]
        else:  # a number: as iterating it would
            raise TypeError(f"{type(raw).__name__!r} object is not iterable")
        out = []
        for tool in entries:
            if not isinstance(tool, dict):
                raise LlmError("a tool must be an object", "invalid_request")
            function = tool.get("function")
            spec: dict[str, Any] = function if isinstance(function, dict) else tool
            name = spec.get("name")
            if not name:
                raise LlmError("a tool has no name", "invalid_request")
            schema = spec.get("input") or spec.get("parameters") or spec.get("input_schema")
            out.append(Tool(name, spec.get("description"),
                            schema if isinstance(schema, dict) else {"type": "object", "properties": {}}))
        return out

    def sampling(self) -> tuple[float | None, int | None]:
        """Temperature and the output-token cap: the `llm.call`'s, else the llm block's, else unset."""
        temperature = self.request.get("temperature")
        if temperature is None:
            temperature = self.config.get("temperature")
        max_tokens = self.request.get("max_completion_tokens")
        if max_tokens is None:
            max_tokens = self.config.get("max_tokens")
        try:
            return (None if temperature is None else float(_number(temperature)),
                    None if max_tokens is None else int(_number(max_tokens)))
        except (TypeError, ValueError) as exc:
            raise LlmError("temperature must be a number and max_completion_tokens an integer",
                           "invalid_request") from exc

    def prices(self) -> tuple[float, float]:
        """`price_in` / `price_out`: prices per 1,000 input / output tokens; absent means free."""
        try:
            return float(self.config.get("price_in") or 0), float(self.config.get("price_out") or 0)
        except (TypeError, ValueError) as exc:
            raise LlmError("llm.price_in / llm.price_out must be numbers (price per 1,000 tokens)",
                           "config_error") from exc


def _number(value: JsonValue) -> int | float | str:
    """A JSON value `float()` or `int()` may take; any other is the TypeError they would raise."""
    if isinstance(value, int | float | str):
        return value
    raise TypeError(f"{type(value).__name__!r} is not a number")


Provider = Callable[[LlmCall], LlmOutcome]
"""A provider's `complete`: one call to one reply, or `LlmError`."""

Streamer = Callable[[LlmCall, OnDelta], LlmOutcome]
"""A provider's `stream`: `Provider` with the reply's text handed to `OnDelta` as it arrives."""


def hand_over(on_delta: OnDelta, text: str) -> None:
    """One piece of the reply to `on_delta`; its False (the caller stops the call) is `StreamStopped`."""
    if text and not on_delta(text):
        raise StreamStopped("the caller stopped the stream")
