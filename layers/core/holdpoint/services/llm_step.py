"""The engine's own LLM call (`run_llm` work): the prompt from the branch, the provider called
(streamed to the session's followers when it has any), the outcome committed under the budget
check (services/streaming.py for the live deltas)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from holdpoint.core import budget, calls
from holdpoint.core.interrupts import llm_call_parked
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.outcomes import LlmOutcome, llm_failure
from holdpoint.core.state import SessionState
from holdpoint.ports import Llm, LlmError, LlmStream, StreamStopped
from holdpoint.services.contention import Transact
from holdpoint.services.live import Live
from holdpoint.services.step import Step
from holdpoint.services.streaming import DeltaStream, EndReason

if TYPE_CHECKING:
    from holdpoint.core.agent_config import AgentConfig

log = Logger(child=True)


@dataclass(kw_only=True)
class LlmSteps(Step):
    """The LLM step of one engine, over its ports as they are now (`Runner.llm_steps`)."""

    llm: Llm
    transact: Transact
    live: Live | None = None
    llm_stream: LlmStream | None = None

    def run(self, state: SessionState, call_id: str) -> None:
        h = state.header
        call = state.calls[call_id]
        request = call.request or {}
        stream: DeltaStream | None = None
        if budget.exceeded(state):
            result = llm_failure(f"budget {budget.limit(state)} spent ({budget.spent(state)})", "budget_exceeded")
        else:
            if request.get("messages"):
                messages = request["messages"]
            else:
                messages = [n.message for n in state.tree.path(call.anchor)]
                system = h.config().system
                if system:
                    messages = [{"role": "system", "content": system}, *messages]
            stream = self.delta_stream(state, call_id)
            result = priced(h.agent, self._ask(state, request, messages, call_id, stream))
            self.counters.add("llm_calls")

        def apply(s: SessionState) -> None:
            calls.apply_llm_result(s, s.calls[call_id], result, self.clock())
            if result.get("cost"):  # only spending crosses a budget; a refused call costs nothing
                budget.check(s, raised_by=f"budget:{call_id}")

        if stream is not None and stream.stopped:
            stream.end("voided")  # its subscribers are told at once; the commit below records nothing
        elif stream is not None:
            stream.drain()  # every delta before the committed message
        reason: EndReason = "failed"
        try:
            committed, _ = self.transact(h.tenant, h.session_id, apply, state)
            after = committed.calls.get(call_id)
            reason = "voided" if after is not None and after.status == "voided" else \
                "finished" if result.get("ok") else "failed"
        finally:
            if stream is not None and not stream.stopped:
                stream.end(reason)

    def _ask(self, state: SessionState, request: dict[str, Any], messages: list[dict[str, Any]], call_id: str,
             stream: DeltaStream | None) -> LlmOutcome:
        """The provider's outcome: streamed when `stream` is given, whole otherwise. A provider
        failure is the outcome; anything else ends the stream `failed` and fails the step."""
        h = state.header
        agent = h.agent_item  # the providers read and check the config's JSON themselves (`ports.Llm`)
        try:
            if stream is not None and self.llm_stream is not None:
                return self.llm_stream(agent, request, messages, call_id, h.tenant, stream.on_delta)
            return self.llm(agent, request, messages, call_id, h.tenant)
        except LlmError as exc:
            return llm_failure(str(exc), exc.code, retryable=exc.retryable)
        except StreamStopped:
            self.counters.add("llm_streams_stopped")
            return llm_failure("the call was voided while its reply streamed", "voided")
        except Exception:
            if stream is not None:
                stream.end("failed")
            raise

    def delta_stream(self, state: SessionState, call_id: str) -> DeltaStream | None:
        """The call's deltas to the session's followers, looked up once now; None (the provider
        called whole) without a WebSocket API or with nobody following."""
        if self.live is None or self.llm_stream is None:
            return None
        h = state.header
        try:
            followers = self.live.connections.followers(h.tenant, h.session_id)
        except Exception:  # live events are best effort: the call goes on whole
            log.exception("looking up the followers of %s failed", h.session_id)
            return None
        if not followers:
            return None
        self.counters.add("llm_streams")
        return DeltaStream(self.live, h.tenant, h.session_id, call_id, followers, self.clock,
                           lambda: self.still_open(h.tenant, h.session_id, call_id))

    def still_open(self, tenant: str, session_id: str, call_id: str) -> bool:
        """Whether the call may still be recorded (R6): one session load."""
        state = self.store.load(tenant, session_id)
        if state is None:
            return False
        call = state.calls.get(call_id)
        return call is not None and call.status == "open" and not llm_call_parked(state, call)


def priced(agent: AgentConfig | None, result: LlmOutcome) -> LlmOutcome:
    """Cost from the llm block's per-1k-token prices when the provider did not price the call."""
    usage = result.get("usage")
    if result.get("cost") or not usage:
        return result
    block = agent.llm if agent is not None else None
    if block is None:
        return result
    price_in, price_out = block.extra("price_in"), block.extra("price_out")
    if price_in is None and price_out is None:
        return result
    cost = budget.token_cost(_tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"),
                             float(price_in or 0), float(price_out or 0))
    return {**result, "cost": cost}


def _tokens(usage: JsonObject, key: str) -> float:
    """A token count of the usage (0 when absent); anything but a number is the TypeError that
    pricing it always raised."""
    count = usage.get(key, 0)
    if isinstance(count, (int, float)):
        return count
    raise TypeError(f"usage.{key} is not a number: {count!r}")

