"""Domain results rendered as the API's bodies: the services decide, the edge says it in JSON."""

from __future__ import annotations

from typing import Any

from holdpoint.services.sessions import Raised
from holdpoint.services.settle import Settled
from holdpoint.services.worker_answers import Submitted


def settled(out: Settled) -> dict[str, Any]:
    return {"ok": True, "id": out.id}


def submitted(out: Submitted) -> dict[str, Any]:
    return {"ok": True, "session_id": out.session_id, "decision_id": out.decision_id, "noop": out.noop}


def raised(out: Raised) -> dict[str, Any]:
    return {"ok": True, "interrupt_id": out.interrupt_id, "noop": out.noop, "interrupt": out.interrupt}
