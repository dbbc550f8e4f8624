"""The resume path (R7, R17, A1, A4): one consistent read of the interrupt, one conditional write,
then one SendTaskSuccess."""

from __future__ import annotations

import json
import time
from typing import Any

from holdpoint.core import schemas
from holdpoint.core.errors import Refusal
from holdpoint.core.expiry import kept_until
from holdpoint.core.interrupts import may_resume, resumable_origins
from holdpoint.core.state import Interrupt, iso_ms
from holdpoint.ports import Clock, Parking, SessionStore
from holdpoint.services.caller import Caller


def resume(store: SessionStore, parking: Parking, caller: Caller, session_id: str, interrupt_id: str,
           payload: Any, clock: Clock = time.time, expect_fingerprint: str | None = None) -> dict[str, Any]:
    """Clear an interrupt exactly once. Stale, unknown and duplicate ids are no-ops (200) that say
    how the interrupt was cleared (A4); an answer its response schema refuses changes nothing (A1),
    nor does an `expect_fingerprint` that is not the fingerprint of the action it approves (A3)."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found")
    found = store.read_interrupt(caller.tenant, session_id, interrupt_id)
    if found is None:
        if not store.session_exists(caller.tenant, session_id, caller.owner()):
            raise Refusal("not_found", f"session {session_id} not found")
        return {"ok": True, "interrupt_id": interrupt_id, "noop": True}
    owner = caller.owner()
    if owner is not None and found.owner != owner:
        raise Refusal("not_found", f"session {session_id} not found")
    if found.status != "open":
        return _noop(parking, found, payload)
    _check(caller, found, payload)
    _check_fingerprint(found, expect_fingerprint)
    responder = {"subject": caller.subject, "origin": caller.origin}
    now = clock()
    outcome, interrupt = store.resolve_interrupt(
        caller.tenant, session_id, interrupt_id, resolution=payload, responder=responder,
        allowed_origins=resumable_origins(caller.origin), at=iso_ms(now), owner=owner,
        generation=found.generation, ttl=kept_until(found.retention_days, now))
    if outcome == "resolved":
        if interrupt is not None and interrupt.task_token:
            parking.complete(interrupt.task_token, {"interrupt_id": interrupt_id})
        return {"ok": True, "interrupt_id": interrupt_id, "noop": False}
    if outcome == "not_found":
        raise Refusal("not_found", f"session {session_id} not found")
    if outcome == "changed" or interrupt is None or interrupt.status == "open":
        # Raised again (another generation, perhaps another schema) between the read and the write.
        raise Refusal("conflict", "the interrupt changed while this resume was checked; retry",
                      param="interrupt_id")
    return _noop(parking, interrupt, payload)


def _check(caller: Caller, interrupt: Interrupt, payload: Any) -> None:
    """R17 (origin rank) and A1 (the response schema), before anything is written."""
    if not may_resume(caller.origin, interrupt.origin):
        raise Refusal("forbidden", f"an interrupt raised by {interrupt.origin} cannot be cleared by {caller.origin}",
                      param="interrupt_id")
    failed = schemas.answer_error(interrupt.response_schema, payload)
    if failed is not None:
        raise Refusal("invalid_resume", failed[1], param=failed[0])


def _check_fingerprint(interrupt: Interrupt, expected: str | None) -> None:
    """A3: an approval given for one exact action is refused once the open interrupt binds another."""
    if expected is None:
        return
    actual = (interrupt.action or {}).get("fingerprint")
    if expected != actual:
        raise Refusal("stale_approval", "the interrupt no longer approves the action this resume expects",
                      param="expect_fingerprint", fingerprint=actual)


def _noop(parking: Parking, interrupt: Interrupt, payload: Any) -> dict[str, Any]:
    """A4: a repeated resume changes nothing and says who cleared the interrupt, when, and how."""
    if interrupt.status == "resolved" and not interrupt.woken and interrupt.task_token:
        # A resume whose SendTaskSuccess was lost (crash) is completed by the retry; a token
        # already spent answers InvalidToken, so this never wakes twice.
        parking.complete(interrupt.task_token, {"interrupt_id": interrupt.interrupt_id})
    who = interrupt.responder or {}
    return {"ok": True, "interrupt_id": interrupt.interrupt_id, "noop": True, "resolved": {
        "by": {"subject": who.get("subject"), "origin": who.get("origin")},
        "at": interrupt.resolved_at,
        "status": interrupt.status,
        "same_payload": _canonical(payload) == _canonical(interrupt.resolution),
    }}


def _canonical(value: Any) -> str:
    """JSON text with sorted keys: the same answer compares equal whatever its key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
