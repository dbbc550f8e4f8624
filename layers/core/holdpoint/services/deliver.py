"""Delivering a decision to the agent's worker (`deliver` work) and the wake that queues
`interrupt.resumed` (R8): the answer is checked (`DecisionResponse`) and applied, or the decision
deferred, retried or failed, each outcome one commit."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger
from pydantic import ValidationError

from holdpoint.core import engine, receipts
from holdpoint.core.errors import ProtocolError, QuotaExceeded
from holdpoint.core.ids import first_error
from holdpoint.core.protocols.worker_actions import DecisionResponse
from holdpoint.core.state import Decision, Interrupt, SessionState
from holdpoint.ports import ReceiptKeys, Throttled, Unavailable, Worker, WorkerDeferred, WorkerUnavailable
from holdpoint.services.contention import Transact
from holdpoint.services.step import Step

log = Logger(child=True)


@dataclass(kw_only=True)
class DecisionSteps(Step):
    """The delivery step and the wake of one engine, over its ports as they are now (`Runner.decisions`)."""

    worker: Worker
    transact: Transact
    receipts: ReceiptKeys | None = None  # signs each closed interrupt's approval receipt (None: none made)

    def _receipt(self, state: SessionState) -> Callable[[Interrupt], str | None] | None:
        """The closed interrupt's approval receipt, signed now with the current key. KMS refusing
        for load fails the wake (its message comes back); refusing the key itself (disabled,
        deleted, not granted) leaves the interrupt without a receipt rather than the session stuck."""
        keys, h = self.receipts, state.header
        if keys is None:
            return None

        def sign(interrupt: Interrupt) -> str | None:
            claims = receipts.claims(interrupt, h.tenant, h.session_id, int(self.clock()))
            try:
                return receipts.encode(claims, keys.kid, keys.sign)
            except (Throttled, Unavailable):
                raise
            except Exception:  # noqa: BLE001 - any other refusal: the wake goes on without a receipt
                log.exception("approval receipt not signed", extra={"session_id": h.session_id,
                                                                    "interrupt_id": interrupt.interrupt_id})
                self.counters.add("receipts_unsigned")
                return None

        return sign

    def wake(self, tenant: str, session_id: str, interrupt_id: str, outcome: str, generation: int | None) -> None:
        """A resume or an expiry (R8). When the first thing the wake makes due is the
        `interrupt.resumed` decision it queued, the worker gets it in this step and the wake commits
        with the delivery's outcome, one load and one commit (docs/ARCHITECTURE.md, "The wake
        delivers in the step that commits it"); otherwise the wake commits alone. The decision's id
        derives from the loaded state, so a crash before that commit redelivers the same decision."""

        def wake(s: SessionState) -> str | None:
            return engine.apply_wake(s, interrupt_id, outcome, generation, self._receipt(s))

        state = self.store.load(tenant, session_id)
        if state is None:
            raise LookupError(f"session {session_id} not found")
        state.now = self.clock()
        happened = wake(state)
        # An expiry commits first: a worker's submit can rebuild a resume's wake, not an expiry's.
        work = engine.next_work(state, state.now) if happened == "resumed" else None
        if work is not None and work.kind == "deliver" and engine.resumes(state.decisions[work.id], interrupt_id):
            self.deliver(state, work.id, before=wake)
            self.counters.add("wakes_delivered_in_step")
        else:
            self.transact(tenant, session_id, wake, state)  # the wake is applied in `state`: a no-op on it
        if happened:
            self.counters.add(f"interrupts_{happened}")

    def deliver(self, state: SessionState, decision_id: str,
                 before: Callable[[SessionState], object] | None = None) -> None:
        """Deliver the decision and commit its outcome. `before` is a step applied in `state` but
        not committed yet (a wake that queued this decision): every commit here applies it first
        (a no-op on `state`, the real thing on a reload), so it commits with whichever outcome."""
        h = state.header
        decision = state.decisions[decision_id]

        def commit(outcome: Callable[[SessionState, Decision], object], loaded: SessionState | None) -> None:
            def step(s: SessionState) -> None:
                if before is not None:
                    before(s)
                current = s.decisions.get(decision_id)  # absent only if a reload's wake queued nothing
                if current is not None:
                    outcome(s, current)

            self.transact(h.tenant, h.session_id, step, loaded)

        request = engine.build_request(state, decision)
        started = time.perf_counter()
        try:
            raw = self.worker(h.agent, request, h.tenant)
        except WorkerDeferred:
            self.counters.add("decisions_deferred")
            commit(lambda s, d: engine.defer_decision(s, d, self.clock()), state)
            return
        except WorkerUnavailable as exc:
            why = str(exc)
            log.warning("worker unavailable: %s", why, extra={"session_id": h.session_id, "decision_id": decision_id})
            self.counters.add("worker_failures")
            commit(lambda s, d: engine.retry_decision(s, d, why, self.clock()), state)
            return
        self.counters.add("decisions_delivered")
        self.counters.time("decision_latency_ms", (time.perf_counter() - started) * 1000)
        log.info("decision delivered", extra={"session_id": h.session_id, "decision_id": decision_id,
                                              "trigger": decision.trigger.get("type"),
                                              "interrupt_id": decision.interrupt_id})
        if raw is None:  # a `null` answer (an echoed `null` proposal): the engine's own continuation
            raw = engine.own_answer(state, decision)
        try:
            response = DecisionResponse.model_validate(raw)
        except ValidationError as exc:
            param, msg = first_error(exc)
            commit(lambda s, d: engine.fail_decision(s, d, msg, param), None)
            return
        try:
            commit(lambda s, d: engine.apply_response(s, d, response, self.clock()), state)
        except ProtocolError as exc:  # `state` is half-changed: the failure commits on a reload
            why, param = str(exc), exc.param
            commit(lambda s, d: engine.fail_decision(s, d, why, param), None)
        except QuotaExceeded as exc:  # an interrupt past a limit: refused like a broken answer, nothing parked
            why, limit = str(exc), exc.limit
            log.warning("worker answer refused: %s", why,
                        extra={"session_id": h.session_id, "decision_id": decision_id})
            commit(lambda s, d: engine.fail_decision(s, d, why, limit, code="quota_exceeded"), None)
