"""Drives one session: load, pick what is due, make the one external call, commit, repeat.

Intent is committed before every external call (a decision queued, a call opened, an
interrupt opened), and outcomes are applied under the header version check, so a crash or
a redelivered message repeats nothing that was committed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from . import engine, llm, workers
from .models import DecisionResponse, first_error
from .parking import Parking
from .queue import WorkQueue
from .session import Effect, SessionState
from .store import Conflict, Store

log = logging.getLogger("holdpoint.runner")
T = TypeVar("T")
COMMIT_RETRIES = 10


class RetryLater(Exception):
    """The step could not finish now (worker down); the queue message is redelivered later."""


@dataclass
class Counters:
    """What a run did, for metrics and tests."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, value: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


@dataclass
class Runner:
    store: Store
    parking: Parking
    queue: WorkQueue
    counters: Counters = field(default_factory=Counters)
    max_steps: int = 40

    def transact(self, tenant: str, session_id: str, mutate: Callable[[SessionState], T]) -> tuple[SessionState, T]:
        """Apply `mutate` to freshly loaded state and commit; on a version conflict, recompute."""
        for _ in range(COMMIT_RETRIES):
            state = self.store.load(tenant, session_id)
            if state is None:
                raise LookupError(f"session {session_id} not found")
            out = mutate(state)
            try:
                self.store.commit(state)
            except Conflict:
                self.counters.add("commit_conflicts")
                time.sleep(0.01)
                continue
            self.after_commit(state)
            return state, out
        raise RetryLater("too many concurrent changes")

    def after_commit(self, state: SessionState) -> None:
        for effect in state.effects:
            if effect.kind == "send_task_success" and effect.token:
                self.parking.complete(effect.token, effect.output or {})
            elif effect.kind == "start_park" and effect.interrupt_id:
                self.counters.add("interrupts_raised")
        for event in state.events:
            if event.type == "call.voided":
                self.counters.add("calls_voided")

    # --- queue messages ----------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> None:
        kind = message.get("kind")
        tenant, session_id = message["tenant"], message["session_id"]
        if kind == "park":
            iid, token = message["interrupt_id"], message["task_token"]
            self.transact(tenant, session_id, lambda s: engine.apply_park_token(s, iid, token))
        elif kind == "wake":
            iid, outcome = message["interrupt_id"], message.get("outcome", "resumed")
            _, happened = self.transact(tenant, session_id, lambda s: engine.apply_wake(s, iid, outcome))
            if happened:
                self.counters.add(f"interrupts_{happened}")
        elif kind != "kick":
            raise ValueError(f"unknown work message kind {kind!r}")
        self.run(tenant, session_id)

    def run(self, tenant: str, session_id: str) -> int:
        """Run what is due until nothing is; returns the number of steps taken."""
        for step in range(self.max_steps):
            state = self.store.load(tenant, session_id)
            if state is None:
                return step
            work = engine.next_work(state)
            if work is None:
                return step
            if work.kind == "start_park":
                self._start_park(state, work.id)
            elif work.kind == "run_llm":
                self._run_llm(state, work.id)
            else:
                self._deliver(state, work.id)
        state = self.store.load(tenant, session_id)
        if state is not None and engine.next_work(state) is not None:
            self.queue.kick(tenant, session_id, state.header.version)
        return self.max_steps

    # --- the three kinds of work ----------------------------------------------------------

    def _start_park(self, state: SessionState, interrupt_id: str) -> None:
        h = state.header
        arn = self.parking.start(h.tenant, h.session_id, state.interrupts[interrupt_id])
        self.transact(h.tenant, h.session_id, lambda s: engine.mark_parked(s, interrupt_id, arn))

    def _run_llm(self, state: SessionState, call_id: str) -> None:
        h = state.header
        call = state.calls[call_id]
        request = call.request or {}
        if request.get("messages"):
            messages = request["messages"]
        else:
            messages = [n.message for n in state.tree.path(call.anchor)]
            system = (h.agent or {}).get("system")
            if system:
                messages = [{"role": "system", "content": system}, *messages]
        try:
            result = llm.complete(h.agent, request, messages, call_id)
        except llm.LlmError as exc:
            result = {"ok": False, "error": str(exc), "code": exc.code}
        self.counters.add("llm_calls")
        self.transact(h.tenant, h.session_id, lambda s: engine.apply_llm_result(s, s.calls[call_id], result))

    def _deliver(self, state: SessionState, decision_id: str) -> None:
        h = state.header
        decision = state.decisions[decision_id]
        request = engine.build_request(state, decision)
        try:
            raw = workers.decide(h.agent, request)
        except workers.WorkerUnavailable as exc:
            why = str(exc)
            log.warning("worker unavailable", extra={"session_id": h.session_id, "decision_id": decision_id})
            _, again = self.transact(h.tenant, h.session_id,
                                     lambda s: engine.retry_decision(s, s.decisions[decision_id], why))
            if again:
                raise RetryLater(why) from exc
            return
        self.counters.add("decisions_delivered")
        try:
            response = DecisionResponse.model_validate(raw)
        except ValidationError as exc:
            param, msg = first_error(exc)
            self.transact(h.tenant, h.session_id,
                          lambda s: engine.fail_decision(s, s.decisions[decision_id], msg, param))
            return

        def apply(s: SessionState) -> None:
            engine.apply_response(s, s.decisions[decision_id], response)

        try:
            self.transact(h.tenant, h.session_id, apply)
        except engine.ProtocolError as exc:
            why, param = str(exc), exc.param
            self.transact(h.tenant, h.session_id,
                          lambda s: engine.fail_decision(s, s.decisions[decision_id], why, param))


def parse_body(body: str) -> dict[str, Any]:
    out = json.loads(body)
    if not isinstance(out, dict):
        raise ValueError("work message is not an object")
    return out


def kick_after(queue: WorkQueue, state: SessionState) -> None:
    if any(e.kind == "kick" for e in state.effects) or any(e.kind == "start_park" for e in state.effects):
        queue.kick(state.header.tenant, state.header.session_id, state.header.version)


__all__ = ["Counters", "Effect", "Runner", "RetryLater", "kick_after", "parse_body"]
