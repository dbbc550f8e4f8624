"""The resume path (R7, R17): one conditional write, then one SendTaskSuccess."""

from __future__ import annotations

import time
from typing import Any

from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import resumable_origins
from holdpoint.core.state import iso_ms
from holdpoint.ports import Clock, Parking, SessionStore
from holdpoint.services.caller import Caller


def resume(store: SessionStore, parking: Parking, caller: Caller, session_id: str, interrupt_id: str,
           payload: Any, clock: Clock = time.time) -> dict[str, Any]:
    """Clear an interrupt exactly once. Stale, unknown and duplicate ids are no-ops (200)."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found")
    responder = {"subject": caller.subject, "origin": caller.origin}
    outcome, interrupt = store.resolve_interrupt(
        caller.tenant, session_id, interrupt_id, resolution=payload, responder=responder,
        allowed_origins=resumable_origins(caller.origin), at=iso_ms(clock()), owner=caller.owner())
    if outcome == "not_found":
        raise Refusal("not_found", f"session {session_id} not found")
    if outcome == "forbidden":
        origin = interrupt.origin if interrupt is not None else "?"
        raise Refusal("forbidden", f"an interrupt raised by {origin} cannot be cleared by {caller.origin}",
                      param="interrupt_id")
    if outcome == "resolved":
        if interrupt is not None and interrupt.task_token:
            parking.complete(interrupt.task_token, {"interrupt_id": interrupt_id})
        return {"ok": True, "interrupt_id": interrupt_id, "noop": False}
    if interrupt is None:
        if not store.session_exists(caller.tenant, session_id, caller.owner()):
            raise Refusal("not_found", f"session {session_id} not found")
    elif interrupt.status == "resolved" and not interrupt.woken and interrupt.task_token:
        # A resume whose SendTaskSuccess was lost (crash) is completed by the retry; a token
        # already spent answers InvalidToken, so this never wakes twice.
        parking.complete(interrupt.task_token, {"interrupt_id": interrupt_id})
    return {"ok": True, "interrupt_id": interrupt_id, "noop": True}
