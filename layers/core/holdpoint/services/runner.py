"""Drives one session: load, pick what is due, make the one external call, commit, repeat.

Intent is committed before every external call (a decision queued, a call opened, an
interrupt opened), and outcomes are applied under the header version check, so a crash or
a redelivered message repeats nothing that was committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, assert_never

from aws_lambda_powertools import Logger

from holdpoint.core import engine, expiry
from holdpoint.core.messages import Deadline, InterruptTimer, Kick, Park, ParkRetry, SessionMessage, Wake
from holdpoint.core.state import SessionState
from holdpoint.ports import (
    Clock,
    Llm,
    LlmStream,
    Parking,
    ReceiptKeys,
    SessionStore,
    Timers,
    Worker,
    WorkQueue,
)
from holdpoint.services.children import Children
from holdpoint.services.contention import transact
from holdpoint.services.deliver import DecisionSteps
from holdpoint.services.errors import Contended, RetryLater
from holdpoint.services.live import Live
from holdpoint.services.llm_step import LlmSteps
from holdpoint.services.park import Parks, Raise
from holdpoint.services.step import Counters

log = Logger(child=True)  # shares the handler's JSON format and its session/interrupt keys
T = TypeVar("T")


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
    receipts: ReceiptKeys | None = None  # signs approval receipts as interrupts close (None: none made)
    fresh: set[Raise] = field(default_factory=set, repr=False)  # raises this engine committed, not yet parked

    # The step services, over this runner's ports as they are now (a test may swap one).

    def _step(self) -> dict[str, Any]:
        return {"store": self.store, "counters": self.counters, "clock": self.clock}

    @property
    def parks(self) -> Parks:
        return Parks(parking=self.parking, timers=self.timers, **self._step())

    @property
    def llm_steps(self) -> LlmSteps:
        return LlmSteps(llm=self.llm, transact=self.transact, live=self.live, llm_stream=self.llm_stream,
                        **self._step())

    @property
    def decisions(self) -> DecisionSteps:
        return DecisionSteps(worker=self.worker, transact=self.transact, receipts=self.receipts, **self._step())

    @property
    def children(self) -> Children:
        return Children(queue=self.queue, transact=self.transact, **self._step())

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
                self.children.spawn(state, effect)
            elif effect.kind == "notify_parent" and h.parent:
                self.children.notify_parent(state, effect)
            elif effect.kind == "send":
                self.children.send(state, effect)
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
                self.parks.token_arrived(message)
                return
            case InterruptTimer():
                self._interrupt_timer(message)
                return
            case ParkRetry():
                self.parks.retry(message)
                return
            case Wake():
                self.decisions.wake(tenant, session_id, message.interrupt_id, message.outcome, message.generation)
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
        waiting, version = self.children.child_status(loaded, call_id)
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
                self.llm_steps.run(state, work.id)
            else:
                self.decisions.deliver(state, work.id)
        state = self.store.load(tenant, session_id)
        if state is not None and engine.next_work(state, self.clock()) is not None:
            self.queue.kick(tenant, session_id, state.header.version)
        return self.max_steps
