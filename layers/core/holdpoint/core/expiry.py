"""A5: what an interrupt does while it waits and when its time runs out.

An interrupt may declare `on_expiry` (`cancel`, `deny`, `approve`), reminders (`remind_after`,
delays in seconds) and an escalation (`escalate_after`; who it adds is the approver policy's
`escalate_to`, A2), each on the `interrupt` action, the API raise, or as the agent's default.
The delays count from when the branch is parked, like `expires_in`. Each reminder and the
escalation is one durable timer named by the interrupt, its generation and the timer, so it is
scheduled once and fires once; a duplicate timer message finds it already recorded and changes
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from holdpoint.core.answers import EXPIRY_RESPONDER, OnExpiry
from holdpoint.core.errors import DeclarationError
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.messages import InterruptTimer
from holdpoint.core.state import Interrupt, SessionState, iso_ms

TIMER_MESSAGE = InterruptTimer.KIND  # the work-queue message kind a reminder or escalation sends
DAY = 86_400


def answer(on_expiry: OnExpiry | None) -> JsonObject:
    """The system answer an expiry resolves the interrupt with (PROTOCOL.md R16, A5)."""
    if on_expiry == "approve":
        return {"status": "resolved", "reason": "expired", "on_expiry": "approve", "approved": True}
    if on_expiry == "deny":
        return {"status": "resolved", "reason": "expired", "on_expiry": "deny", "approved": False}
    return {"status": "cancelled", "reason": "expired"}


@dataclass(frozen=True)
class Declared:
    """The A5 fields an interrupt is raised with, before the agent's defaults fill the gaps."""

    on_expiry: OnExpiry | None = None
    remind_after: list[int] | None = None
    escalate_after: int | None = None

    @classmethod
    def of(cls, source: Any) -> Declared:
        """From a wire model (the `interrupt` action or the API raise body)."""
        return cls(on_expiry=getattr(source, "on_expiry", None), remind_after=getattr(source, "remind_after", None),
                   escalate_after=getattr(source, "escalate_after", None))


def apply_declared(state: SessionState, interrupt: Interrupt, declared: Declared) -> None:
    """Fill the interrupt's A5 fields from the declaration, else the agent's defaults, and refuse
    (DeclarationError, naming the field) a timer that would fire only after the interrupt expired."""
    agent = state.header.config()
    interrupt.on_expiry = declared.on_expiry or agent.interrupt_on_expiry
    interrupt.remind_after = declared.remind_after or agent.interrupt_remind_after
    interrupt.escalate_after = declared.escalate_after or agent.interrupt_escalate_after
    interrupt.retention_days = agent.retention_days
    expires = interrupt.expires_in
    if expires is None:
        return
    for i, delay in enumerate(interrupt.remind_after or []):
        if delay >= expires:
            raise DeclarationError(f"remind_after[{i}]", f"a reminder after {delay} s would come after the "
                            f"interrupt expires ({expires} s)")
    if interrupt.escalate_after is not None and interrupt.escalate_after >= expires:
        raise DeclarationError("escalate_after", f"an escalation after {interrupt.escalate_after} s would come after "
                        f"the interrupt expires ({expires} s)")


@dataclass(frozen=True)
class Timer:
    """One durable timer an interrupt asks for when its branch is parked."""

    seconds: int
    key: str
    message: InterruptTimer


def timers(tenant: str, session_id: str, interrupt: Interrupt) -> list[Timer]:
    """The reminders and the escalation of an open interrupt, each named for exactly-once."""
    out: list[Timer] = []
    iid, generation = interrupt.interrupt_id, interrupt.generation
    prefix = f"interrupt/{iid}/{generation}"
    for i, delay in enumerate(interrupt.remind_after or []):
        out.append(Timer(delay, f"{prefix}/remind/{i}",
                         InterruptTimer(tenant, session_id, iid, generation, "remind", i)))
    if interrupt.escalate_after is not None:
        out.append(Timer(interrupt.escalate_after, f"{prefix}/escalate",
                         InterruptTimer(tenant, session_id, iid, generation, "escalate", 0)))
    return out


def apply_timer(state: SessionState, interrupt_id: str, generation: int, timer: str, index: int) -> str | None:
    """A reminder or escalation fired: recorded once on the open interrupt it was set for, with
    its event; for a closed interrupt, another generation, or a repeat, nothing happens."""
    interrupt = state.interrupts.get(interrupt_id)
    if interrupt is None or interrupt.status != "open" or interrupt.generation != generation:
        return None
    if timer == "remind":
        delays = interrupt.remind_after or []
        if index in interrupt.reminded or not 0 <= index < len(delays):
            return None
        interrupt.reminded = [*interrupt.reminded, index]
        state.touch(interrupt)
        state.emit("interrupt.reminded", interrupt_id=interrupt_id, reason=interrupt.reason, reminder=index + 1,
                   of=len(delays), after_secs=delays[index])
        return "reminded"
    if timer != "escalate" or interrupt.escalated:
        return None
    interrupt.escalated = True
    state.touch(interrupt)
    added = interrupt.escalate_to.to_item() if interrupt.escalate_to else None
    state.emit("interrupt.escalated", interrupt_id=interrupt_id, reason=interrupt.reason,
               escalate_to=added, after_secs=interrupt.escalate_after)
    return "escalated"


def expire(state: SessionState, interrupt: Interrupt) -> None:
    """R16 with A5: the interrupt closes as `expired` with its declared outcome as the answer."""
    outcome = interrupt.on_expiry or "cancel"
    interrupt.status = "expired"
    interrupt.resolution = answer(outcome)
    interrupt.responder = EXPIRY_RESPONDER
    interrupt.resolved_at = iso_ms(state.now)
    interrupt.kept_until = kept_until(interrupt.retention_days, state.now)
    state.emit("interrupt.expired", interrupt_id=interrupt.interrupt_id, outcome=outcome,
               payload=interrupt.resolution)


def kept_until(retention_days: int | None, closed_at: float) -> int | None:
    """A6: the epoch second after which a closed interrupt may be deleted; None keeps it."""
    return int(closed_at) + retention_days * DAY if retention_days else None
