"""Domain results rendered as the API's bodies: the services decide, the edge says it in JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holdpoint.core.errors import Refusal
from holdpoint.http.edge import load_refusal, status_of
from holdpoint.ports import Unavailable

if TYPE_CHECKING:  # the resume function renders its answer without loading the other use cases
    from holdpoint.services.bulk import Outcome
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


def bulk_answered(outcomes: list[Outcome]) -> dict[str, Any]:
    """A bulk answer's body: each item's outcome in the order sent, as a single resume would
    answer it (its body, or its refusal's) with that answer's HTTP status, and how many of each."""
    results = [_bulk_result(out) for out in outcomes]
    counts = {"answered": sum(1 for r in results if r["http_status"] == 200 and not r["noop"]),
              "noop": sum(1 for r in results if r["http_status"] == 200 and r["noop"]),
              "refused": sum(1 for r in results if r["http_status"] != 200)}
    return {"results": results, "counts": counts}


def _bulk_result(out: Outcome) -> dict[str, Any]:
    """One item: `session_id`, `http_status` (what the single resume would have answered) and the
    single resume's body (its `interrupt_id`, and a quorum's `status: "open"`, with it)."""
    where = {"session_id": out.item.session_id, "interrupt_id": out.item.interrupt_id}
    if out.resumed is not None:
        return {**where, "http_status": 200, **resumed(out.resumed)}
    refused = out.failed if isinstance(out.failed, Refusal) else load_refusal(out.failed or Unavailable())
    return {**where, "http_status": status_of(refused), **refused.body()}


def followed(out: Followed) -> dict[str, Any]:
    """A one-click link's body: its resume's, with the option it answered."""
    return {**resumed(out.resumed), "option": out.option}
