"""The resume path (R7, R17): one conditional write, then one SendTaskSuccess."""

from __future__ import annotations

from typing import Any

from holdpoint.aws.parking import Parking
from holdpoint.aws.store import Store
from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import resumable_origins
from holdpoint.core.state import now_iso
from holdpoint.services.auth import Caller


def resume(store: Store, parking: Parking, caller: Caller, session_id: str, interrupt_id: str,
           payload: Any) -> dict[str, Any]:
    """Clear an interrupt exactly once. Stale, unknown and duplicate ids are no-ops (200)."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found")
    responder = {"subject": caller.subject, "origin": caller.origin}
    outcome, item = store.resolve_interrupt(
        caller.tenant, session_id, interrupt_id, resolution=payload, responder=responder,
        allowed_origins=resumable_origins(caller.origin), at=now_iso(), owner=caller.owner())
    if outcome == "not_found":
        raise Refusal("not_found", f"session {session_id} not found")
    if outcome == "forbidden":
        origin = item.get("origin", {}).get("S", "?")
        raise Refusal("forbidden", f"an interrupt raised by {origin} cannot be cleared by {caller.origin}",
                       param="interrupt_id")
    if outcome == "resolved":
        token = store.body(item).get("task_token")
        if token:
            parking.complete(token, {"interrupt_id": interrupt_id})
        return {"ok": True, "interrupt_id": interrupt_id, "noop": False}
    if not item:
        if not store.session_exists(caller.tenant, session_id, caller.owner()):
            raise Refusal("not_found", f"session {session_id} not found")
        return {"ok": True, "interrupt_id": interrupt_id, "noop": True}
    body = store.body(item)
    if item.get("status", {}).get("S") == "resolved" and not body.get("woken") and body.get("task_token"):
        # A resume whose SendTaskSuccess was lost (crash) is completed by the retry; a token
        # already spent answers InvalidToken, so this never wakes twice.
        parking.complete(body["task_token"], {"interrupt_id": interrupt_id})
    return {"ok": True, "interrupt_id": interrupt_id, "noop": True}
