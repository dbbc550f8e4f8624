"""An LLM call's outcome: the one shape every provider, the worker's `llm.result`/`llm.error`, the
settle route and a budget refusal produce, and `calls.apply_llm_result` records."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from holdpoint.core.jsontypes import JsonObject


class LlmOutcome(TypedDict):
    ok: bool
    message: NotRequired[JsonObject | None]  # the assistant's reply, when ok
    truncated: NotRequired[bool]
    usage: NotRequired[JsonObject | None]
    cost: NotRequired[float | None]
    error: NotRequired[Any]  # when not ok
    code: NotRequired[str | None]
    retryable: NotRequired[bool | None]  # when not ok: whether another attempt may help


def llm_reply(message: JsonObject, *, usage: JsonObject | None = None, cost: float | None = None,
              truncated: bool = False) -> LlmOutcome:
    return {"ok": True, "message": message, "usage": usage, "cost": cost, "truncated": truncated}


def llm_failure(error: Any, code: str | None = None, *, retryable: bool | None = None) -> LlmOutcome:
    return {"ok": False, "error": error, "code": code, "retryable": retryable}
