"""Parking a raised interrupt's branch, through the `Parking` port alone: the services never see
what Step Functions hands back (the execution, its task token); the parking keeps its own record of
each raise's pause. Every call is idempotent, so the step loop asks again after a crash and a
redelivered message repeats nothing (docs/ARCHITECTURE.md, "Parking")."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from aws_lambda_powertools import Logger

from holdpoint.core import expiry
from holdpoint.core.interrupts import park_retry_seconds
from holdpoint.core.messages import Park, ParkRetry
from holdpoint.core.state import Interrupt, SessionState, epoch
from holdpoint.ports import Parking, ParkRefused, Timers
from holdpoint.services.step import Step

log = Logger(child=True)
Raise = tuple[str, int]
"""One raise of an interrupt: (interrupt id, generation)."""


def needs_park(interrupt: Interrupt) -> bool:
    """Open, or resolved and not yet woken: its pause holds it (or stands in for a lost wake)."""
    return interrupt.status == "open" or not interrupt.woken


@dataclass(kw_only=True)
class Parks(Step):
    """The park steps of one engine: the step loop's `settle`, and the `Park` and `ParkRetry` messages."""

    parking: Parking
    timers: Timers

    def settle(self, state: SessionState, settled: set[Raise], fresh: set[Raise]) -> bool:
        """Start the pause of the first raise that needs one and has none (nor a refusal waiting on
        its timer); True when it did (a step of its own). `settled` holds the raises this run has
        asked about, so each record is read once a run; `fresh` the raises this engine's own commits
        made, which have no record to read yet (a repeat of the start is a no-op)."""
        h = state.header
        for interrupt in state.interrupts.values():
            raise_ = (interrupt.interrupt_id, interrupt.generation)
            if raise_ in settled or not needs_park(interrupt):
                continue
            settled.add(raise_)
            if raise_ in fresh:
                fresh.discard(raise_)
            else:
                parked = self.parking.status(h.tenant, h.session_id, interrupt)
                if parked.started or parked.waits:
                    continue
            self.start(state, interrupt)
            return True
        return False

    def start(self, state: SessionState, interrupt: Interrupt) -> None:
        """A5: reminders and escalation first (a timer named by its key is scheduled once however
        often it is asked for), then the pause, which records itself started: a crash before that
        repeats this step."""
        h = state.header
        if interrupt.status == "open":
            for timer in expiry.timers(h.tenant, h.session_id, interrupt):
                self.timers.schedule(timer.seconds, timer.message, timer.key)
        try:
            self.parking.park(h.tenant, h.session_id, interrupt)
        except ParkRefused as exc:
            self.wait_for_capacity(h.tenant, h.session_id, interrupt, 1, str(exc))

    def wait_for_capacity(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int, why: str) -> None:
        """Step Functions refused the park (the open-execution ceiling, or a throttle): the
        interrupt stays open and answerable in the table, and a `ParkRetry` timer tries again
        with backoff, never later than the expiry it then carries out. The timer is set before the
        refusal is recorded (which stops the step loop from starting the park itself): a crash
        between the two repeats the step, which asks for the same timer. Nothing blocks."""
        iid = interrupt.interrupt_id
        left = epoch(interrupt.expires_at) - self.clock() if interrupt.expires_at else None
        message = ParkRetry(tenant, session_id, iid, interrupt.generation, attempt)
        self.timers.schedule(park_retry_seconds(attempt, left), message,
                             f"park/{iid}/{interrupt.generation}/{attempt}")
        log.warning("park waits for capacity: %s", why,
                    extra={"session_id": session_id, "interrupt_id": iid, "attempt": attempt})
        self.counters.add("parks_waiting_for_capacity")
        self.parking.wait(tenant, session_id, interrupt, attempt)

    def retry(self, message: ParkRetry) -> None:
        """A refused park's timer fired. An interrupt answered meanwhile gets no execution: the
        resume put its wake on the queue, and this wake again (a no-op once applied) covers a resume
        that crashed before sending it. One past its expiry is expired here, as its execution's
        timeout would have. Otherwise the execution starts, for what is left of the expiry, or the
        wait goes on. A timer of another raise or attempt, or a park already started, is stale."""
        tenant, session_id, iid = message.tenant, message.session_id, message.interrupt_id
        state = self.store.load(tenant, session_id)
        interrupt = state.interrupts.get(iid) if state is not None else None
        if interrupt is None or interrupt.generation != message.generation:
            return
        parked = self.parking.status(tenant, session_id, interrupt)
        if parked.started or parked.waits != message.attempt:
            return
        if interrupt.status != "open":
            if not interrupt.woken:
                self.parking.release(tenant, session_id, interrupt)
            return
        left = epoch(interrupt.expires_at) - self.clock() if interrupt.expires_at else None
        if left is not None and left <= 0:
            self.parking.expire(tenant, session_id, interrupt)
            return
        try:
            self.parking.park(tenant, session_id, interrupt, math.ceil(left) if left is not None else None)
        except ParkRefused as exc:
            self.wait_for_capacity(tenant, session_id, interrupt, message.attempt + 1, str(exc))
            return
        self.counters.add("parks_started_after_wait")

    def token_arrived(self, message: Park) -> None:
        """The started pause reported what ends it: the parking keeps it (one conditional write, no
        load, no run: it makes nothing due), then the interrupt is read. The order matters: a resume
        writes the interrupt, then reads the record, so one of the two sees the other. An interrupt
        no longer open (the resume came first, or it was answered and woken already) ends the pause
        now, so none waits out its timeout; one resolved and not yet woken is released (wake, then
        end): the resume's own wake may have been lost to a crash. The pause of an earlier raise of
        the same id (its `generation`) is ended, so its timeout cannot expire the raise now open;
        one naming no interrupt leaves nothing behind. A spent pause ends as a no-op, and the
        engine applies one wake per generation, so a redelivered message repeats nothing. A message
        of no generation (an execution started before ParkBranch sent one) is the open raise's."""
        if message.generation is None:
            found = self.store.read_interrupt(message.tenant, message.session_id, message.interrupt_id)
            message = replace(message, generation=found.generation if found is not None else 0)
        self.parking.keep_token(message)
        interrupt = self.store.read_interrupt(message.tenant, message.session_id, message.interrupt_id)
        if interrupt is None:
            self.parking.forget(message)
        elif message.generation != interrupt.generation:
            self.parking.end(message)
        elif interrupt.status == "open":
            return
        elif not interrupt.woken and interrupt.status == "resolved":
            self.parking.release(message.tenant, message.session_id, interrupt)
        else:
            self.parking.end(message)
