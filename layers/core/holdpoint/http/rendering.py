"""Domain results rendered as the API's bodies: the services decide, the edge says it in JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the resume function renders its answer without loading the other use cases
    from holdpoint.services.links import Followed
    from holdpoint.services.resume import Resumed
    from holdpoint.services.sessions import Raised
    from holdpoint.services.settle import Settled
    from holdpoint.services.worker_answers import Submitted


def settled(out: Settled) -> dict[str, Any]:
    return {"ok": True, "id": out.id}


def submitted(out: Submitted) -> dict[str, Any]:
    return {"ok": True, "session_id": out.session_id, "decision_id": out.decision_id, "noop": out.noop}


def raised(out: Raised) -> dict[str, Any]:
    return {"ok": True, "interrupt_id": out.interrupt_id, "noop": out.noop, "interrupt": out.interrupt}


def resumed(out: Resumed) -> dict[str, Any]:
    """A resume's body: a quorum's progress, a repeat's own earlier answer (A2) or who cleared it (A4)."""
    body: dict[str, Any] = {"ok": True, "interrupt_id": out.interrupt_id, "noop": out.noop}
    if not out.known:  # still a no-op (A4), but said, so a typo'd id is not taken for an answer
        body["known"] = False
    if out.progress is not None:
        body.update(status="open", approvals=out.progress.approvals, quorum=out.progress.quorum)
    if out.answered is not None:
        body["answered"] = {"at": out.answered.at, "status": out.answered.status,
                            "same_payload": out.answered.same_payload}
    if out.cleared is not None:
        done = out.cleared
        body["resolved"] = {"by": {"subject": done.subject, "origin": done.origin}, "at": done.at,
                            "status": done.status, "same_payload": done.same_payload}
    if out.edited is not None:  # A3: the approval binds the edited action; a quorum's count restarted
        body["edit"] = {"fingerprint": out.edited.fingerprint, "replaces": out.edited.replaces,
                        "restarted": True, "superseded": out.edited.superseded}
    return body


def followed(out: Followed) -> dict[str, Any]:
    """A one-click link's body: its resume's, with the option it answered."""
    return {**resumed(out.resumed), "option": out.option}
