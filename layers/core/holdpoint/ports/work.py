"""The engine's work and the calls it makes: the work queue, durable timers, the customer's
worker, the LLM providers and the clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from holdpoint.core.messages import WorkMessage
from holdpoint.core.outcomes import LlmOutcome

if TYPE_CHECKING:  # the models load on first use, not with the ports (bench/README.md (c))
    from holdpoint.core.agent_config import AgentConfig


class WorkQueue(Protocol):
    def kick(self, tenant: str, session_id: str, version: int) -> None: ...


class Timers(Protocol):
    """Durable timers: `message` reaches the work queue after `seconds`; `key` names the timer
    within the message's session, so asking twice for one key is one timer."""

    def schedule(self, seconds: float, message: WorkMessage, key: str) -> None: ...


Worker = Callable[["AgentConfig | None", dict[str, Any], str], dict[str, Any] | None]
"""Ask the agent's worker (agent config, decision request, the session's tenant) for its answer;
`None` is a `null` answer (the engine applies its own continuation)."""


Llm = Callable[[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]], str, str], LlmOutcome]
"""Run one LLM call (agent config, request, prompt messages, call id, the session's tenant) to an
`llm.finished`-shaped outcome; the tenant scopes the provider's secret references. The config goes
as its JSON (`AgentConfig.to_item`): each provider reads and checks the `llm` block's fields it
defines (docs/LLM_PROVIDERS.md), which the config leaves open."""


OnDelta = Callable[[str], bool]
"""Takes the next piece of a streamed reply's text as the provider hands it over; False stops the
stream (the provider stops reading and raises `StreamStopped`)."""


LlmStream = Callable[[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]], str, str, OnDelta], LlmOutcome]
"""`Llm` with the reply's text handed to `OnDelta` as it arrives; the outcome is the same whole reply."""


Clock = Callable[[], float]
"""Epoch seconds."""
