"""Drives one session: load, pick what is due, make the one external call, commit, repeat.

Intent is committed before every external call (a decision queued, a call opened, an
interrupt opened), and outcomes are applied under the header version check, so a crash or
a redelivered message repeats nothing that was committed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, assert_never

from aws_lambda_powertools import Logger
from pydantic import ValidationError

from holdpoint.core import budget, calls, claims, engine, expiry, subagents
from holdpoint.core.client_inputs import ClientMessageInput
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import first_error
from holdpoint.core.inputs import start_session
from holdpoint.core.interrupts import llm_call_parked
from holdpoint.core.messages import Deadline, InterruptTimer, Kick, Park, ParkRetry, SessionMessage, Wake
from holdpoint.core.outcomes import LlmOutcome, llm_failure
from holdpoint.core.quotas import QuotaExceeded
from holdpoint.core.state import Decision, Effect, SessionState, derive
from holdpoint.core.turns import add_user_input, start_turn
from holdpoint.core.worker_protocol import DecisionResponse
from holdpoint.ports import (
    Clock,
    Conflict,
    Llm,
    LlmError,
    LlmStream,
    Parking,
    SessionStore,
    StreamStopped,
    Timers,
    Worker,
    WorkerDeferred,
    WorkerUnavailable,
    WorkQueue,
)
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.contention import Contended, transact
from holdpoint.services.counters import Counters
from holdpoint.services.live import Live
from holdpoint.services.park import Parks, Raise
from holdpoint.services.streaming import DeltaStream, EndReason

log = Logger(child=True)  # shares the handler's JSON format and its session/interrupt keys
T = TypeVar("T")


class RetryLater(Exception):
    """The step could not finish now; the queue message is redelivered later."""


@dataclass
class Runner:
    """The engine's loop over one session, wired to its ports by the entry point (the engine
    Lambda, or a test). With `live` and `llm_stream` (a WebSocket API), an LLM call streams its
    reply's text to the session's followers (services/streaming.py)."""

    store: SessionStore
    parking: Parking
    queue: WorkQueue
    timers: Timers
    worker: Worker
    llm: Llm
    counters: Counters = field(default_factory=Counters)
    max_steps: int = 40
    clock: Clock = time.time
    live: Live | None = None
    llm_stream: LlmStream | None = None
    fresh: set[Raise] = field(default_factory=set, repr=False)  # raises this engine committed, not yet parked

    @property
    def parks(self) -> Parks:
        """The park steps, over this runner's ports as they are now (a test may swap one)."""
        return Parks(self.store, self.parking, self.timers, self.counters, self.clock)

    def transact(self, tenant: str, session_id: str, mutate: Callable[[SessionState], T],
                 loaded: SessionState | None = None, *, head_only: bool = False) -> tuple[SessionState, T]:
        """Apply `mutate` to the session and commit (`contention.transact`), then run the effects
        the step asked for. `loaded` (state read for this step and not yet changed) saves the
        first read; `head_only` loads only the header and interrupts, for a `mutate` that reads
        nothing else."""
        first = [loaded] if loaded is not None else []

        def load() -> SessionState:
            state = first.pop() if first else self.store.load(tenant, session_id, head_only=head_only)
            if state is None:
                raise LookupError(f"session {session_id} not found")
            return state

        try:
            state, out = transact(self.store, load, mutate, clock=self.clock,
                                  on_conflict=lambda: self.counters.add("commit_conflicts"))
        except Contended as exc:
            raise RetryLater(str(exc)) from None
        self.after_commit(state)
        return state, out

    def after_commit(self, state: SessionState) -> None:
        """The effects a committed step asked for: each is idempotent, so a crash before or
        during them is repaired by redelivery without doubling anything."""
        h = state.header
        for effect in state.effects:
            if effect.kind == "start_park" and effect.interrupt_id in state.interrupts:
                self.counters.add("interrupts_raised")
                self.fresh.add((effect.interrupt_id, state.interrupts[effect.interrupt_id].generation))
            elif effect.kind == "timer":
                self.timers.schedule(effect.seconds, effect.message or Kick(h.tenant, h.session_id),
                                     effect.key or "timer")
            elif effect.kind == "spawn":
                self._spawn(state, effect)
            elif effect.kind == "notify_parent" and h.parent:
                self._notify_parent(state, effect)
            elif effect.kind == "send":
                self._send(state, effect)
        for event in state.events:
            if event.type == "call.voided":
                self.counters.add("calls_voided")

    # --- queue messages ----------------------------------------------------------------

    def handle(self, message: SessionMessage) -> None:
        """One work message, parsed at the engine's edge (`core.messages`), dispatched by its class.
        A park or a reminder makes nothing due; the others run the session's loop after."""
        tenant, session_id = message.tenant, message.session_id
        match message:
            case Park():
                self.parks.held(message)
                return
            case InterruptTimer():
                self._interrupt_timer(message)
                return
            case ParkRetry():
                self.parks.retry(message)
                return
            case Wake():
                self._wake(tenant, session_id, message.interrupt_id, message.outcome, message.generation)
            case Deadline():
                self._deadline(message)
            case Kick():
                pass
            case _:
                assert_never(message)
        self.run(tenant, session_id)

    def _interrupt_timer(self, message: InterruptTimer) -> None:
        """A5: a reminder or escalation touches one interrupt and makes nothing due."""
        _, happened = self.transact(message.tenant, message.session_id, lambda s: expiry.apply_timer(
            s, message.interrupt_id, message.generation, message.timer, message.index), head_only=True)
        if happened:
            self.counters.add(f"interrupts_{happened}")

    def _deadline(self, message: Deadline) -> None:
        tenant, session_id, call_id = message.tenant, message.session_id, message.call_id
        loaded = self.store.load(tenant, session_id)  # read once: for the child check and the commit
        waiting, version = self._child_status(loaded, call_id)
        self.transact(tenant, session_id, lambda s: engine.apply_deadline(
            s, call_id, message.attempt, self.clock(), child_waiting=waiting, child_version=version), loaded)

    def run(self, tenant: str, session_id: str) -> int:
        """Run what is due until nothing is; returns the number of steps taken. Parks come first,
        one a step (`Parks.settle`: each raise's park record read at most once a run)."""
        settled: set[Raise] = set()
        for step in range(self.max_steps):
            state = self.store.load(tenant, session_id)
            if state is None:
                return step
            state.now = self.clock()
            if self.parks.settle(state, settled, self.fresh):
                continue
            work = engine.next_work(state, self.clock())
            if work is None:
                return step
            if work.kind == "run_llm":
                self._run_llm(state, work.id)
            else:
                self._deliver(state, work.id)
        state = self.store.load(tenant, session_id)
        if state is not None and engine.next_work(state, self.clock()) is not None:
            self.queue.kick(tenant, session_id, state.header.version)
        return self.max_steps

    # --- the two kinds of work ----------------------------------------------------------

    def _run_llm(self, state: SessionState, call_id: str) -> None:
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
                system = (h.agent or {}).get("system")
                if system:
                    messages = [{"role": "system", "content": system}, *messages]
            stream = self._delta_stream(state, call_id)
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
        try:
            if stream is not None and self.llm_stream is not None:
                return self.llm_stream(h.agent, request, messages, call_id, h.tenant, stream.on_delta)
            return self.llm(h.agent, request, messages, call_id, h.tenant)
        except LlmError as exc:
            return llm_failure(str(exc), exc.code, retryable=exc.retryable)
        except StreamStopped:
            self.counters.add("llm_streams_stopped")
            return llm_failure("the call was voided while its reply streamed", "voided")
        except Exception:
            if stream is not None:
                stream.end("failed")
            raise

    def _delta_stream(self, state: SessionState, call_id: str) -> DeltaStream | None:
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
                           lambda: self._still_open(h.tenant, h.session_id, call_id))

    def _still_open(self, tenant: str, session_id: str, call_id: str) -> bool:
        """Whether the call may still be recorded (R6): one session load."""
        state = self.store.load(tenant, session_id)
        if state is None:
            return False
        call = state.calls.get(call_id)
        return call is not None and call.status == "open" and not llm_call_parked(state, call)

    def _wake(self, tenant: str, session_id: str, interrupt_id: str, outcome: str, generation: int | None) -> None:
        """A resume or an expiry (R8). When the first thing the wake makes due is the
        `interrupt.resumed` decision it queued, the worker gets it in this step and the wake commits
        with the delivery's outcome, one load and one commit (docs/ARCHITECTURE.md, "The wake
        delivers in the step that commits it"); otherwise the wake commits alone. The decision's id
        derives from the loaded state, so a crash before that commit redelivers the same decision."""

        def wake(s: SessionState) -> str | None:
            return engine.apply_wake(s, interrupt_id, outcome, generation)

        state = self.store.load(tenant, session_id)
        if state is None:
            raise LookupError(f"session {session_id} not found")
        state.now = self.clock()
        happened = wake(state)
        # An expiry commits first: a worker's submit can rebuild a resume's wake, not an expiry's.
        work = engine.next_work(state, state.now) if happened == "resumed" else None
        if work is not None and work.kind == "deliver" and engine.resumes(state.decisions[work.id], interrupt_id):
            self._deliver(state, work.id, before=wake)
            self.counters.add("wakes_delivered_in_step")
        else:
            self.transact(tenant, session_id, wake, state)  # the wake is applied in `state`: a no-op on it
        if happened:
            self.counters.add(f"interrupts_{happened}")

    def _deliver(self, state: SessionState, decision_id: str,
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
        except engine.ProtocolError as exc:  # `state` is half-changed: the failure commits on a reload
            why, param = str(exc), exc.param
            commit(lambda s, d: engine.fail_decision(s, d, why, param), None)
        except QuotaExceeded as exc:  # an interrupt past a limit: refused like a broken answer, nothing parked
            why, limit = str(exc), exc.limit
            log.warning("worker answer refused: %s", why,
                        extra={"session_id": h.session_id, "decision_id": decision_id})
            commit(lambda s, d: engine.fail_decision(s, d, why, limit, code="quota_exceeded"), None)

    # --- effects that reach other sessions -----------------------------------------------------

    def _spawn(self, parent: SessionState, effect: Effect) -> None:
        """Create the child session (once: its id is derived from the parent's call) and start it."""
        data = effect.data or {}
        h = parent.header
        child_id = data["session_id"]
        parent_ref = {"session_id": h.session_id, "call_id": data["call_id"]}
        found = self.store.load(h.tenant, child_id)
        why = claims.reuse_refusal(found.header, agent_id=data["agent_id"], kind="conversation",
                                   principal=claims.principal_of(h), parent=parent_ref) if found else None
        if why is not None:  # an id the worker chose names a session that is not this call's child
            self.transact(h.tenant, h.session_id, lambda s: subagents.apply_child_result(
                s, data["call_id"], False, None, {"code": "session_taken", "session_id": child_id,
                                                  "message": f"session {child_id} cannot be this call's child: {why}"}))
            return
        if found is None:
            agent = self.store.get_agent(h.tenant, data["agent_id"])
            if agent is None:
                self.transact(h.tenant, h.session_id, lambda s: subagents.apply_child_result(
                    s, data["call_id"], False, None, {"code": "agent_not_found", "agent_id": data["agent_id"]}))
                return
            child = SessionState.new(h.tenant, child_id, data["agent_id"], now=self.clock(), identity=h.identity,
                                     end_user=h.end_user,
                                     ancestry=data["ancestry"],
                                     parent=parent_ref)
            start_session(child, agent)
            turn_id = derive("turn", child_id, "first")
            start_turn(child, turn_id)
            message = {**data["message"], "id": derive("msg", child_id, "task")}
            add_user_input(child, turn_id, {"type": "client.message", "message": message})
            with contextlib.suppress(Conflict):  # created by an earlier try of this step
                self.store.commit(child)
        self.queue.kick(h.tenant, child_id, 0)

    def _child_status(self, state: SessionState | None, call_id: str) -> tuple[bool, int | None]:
        """For a sub_agent call: whether its child waits on a person, and the child's version."""
        call = state.calls.get(call_id) if state is not None else None
        if state is None or call is None or call.kind != "sub_agent" or not call.child_session_id:
            return False, None
        child = self.store.load(state.header.tenant, call.child_session_id)
        if child is None:
            return False, None
        return self._waiting(child, 0), child.header.version

    def _waiting(self, session: SessionState, depth: int) -> bool:
        """An open interrupt in the session or, 8 levels down, in a sub-agent it waits on."""
        if session.open_interrupts():
            return True
        if depth >= 8:
            return False
        for call in session.open_calls():
            child = self.store.load(session.header.tenant, call.child_session_id) \
                if call.kind == "sub_agent" and call.child_session_id else None
            if child is not None and self._waiting(child, depth + 1):
                return True
        return False

    def _notify_parent(self, child: SessionState, effect: Effect) -> None:
        data = effect.data or {}
        parent = child.header.parent or {}
        tenant = child.header.tenant
        try:
            state, _ = self.transact(tenant, parent["session_id"], lambda s: subagents.apply_child_result(
                s, parent["call_id"], bool(data.get("ok")), data.get("result"), data.get("error"),
                child.header.session_id))
        except LookupError:
            log.warning("parent session is gone", extra={"session_id": child.header.session_id})
            return
        self.queue.kick(tenant, parent["session_id"], state.header.version)

    def _send(self, state: SessionState, effect: Effect) -> None:
        """`message.send`: a queued client message into another session of the same tenant."""
        data = effect.data or {}
        who = Caller(state.header.tenant, f"session:{state.header.session_id}", "machine")
        inp = ClientMessageInput(type="client.message", message=data["message"], queue=True,
                                 turn_id=derive("turn", state.header.session_id, data.get("key")))
        try:
            sessions.submit(self.store, self.queue, who, data["session_id"], inp, clock=self.clock, derived_turn=True)
        except Refusal as exc:
            log.warning("message.send refused: %s", exc.message, extra={"session_id": state.header.session_id})


def priced(agent: dict[str, Any] | None, result: LlmOutcome) -> LlmOutcome:
    """Cost from the llm block's per-1k-token prices when the provider did not price the call."""
    usage = result.get("usage")
    if result.get("cost") or not usage:
        return result
    block = (agent or {}).get("llm") or {}
    price_in, price_out = block.get("price_in"), block.get("price_out")
    if price_in is None and price_out is None:
        return result
    cost = budget.token_cost(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0),
                             float(price_in or 0), float(price_out or 0))
    return {**result, "cost": cost}

