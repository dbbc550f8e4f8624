"""The inbox and audit trail (A6): a tenant's interrupts across sessions, open or closed, filtered
by status, agent, reason, age, nearness of expiry and who may answer them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from holdpoint.core import approvals
from holdpoint.core.state import Interrupt, iso_ms
from holdpoint.ports import Clock, InboxQuery, InboxRow, InboxStatus, Interrupts, Sealer
from holdpoint.services.caller import Caller
from holdpoint.services.resume import open_fields, readable, refusal, shown_to
from holdpoint.services.sessions import opened_cursor, sealed_cursor

AUDIT_FIELDS = ("requester", "approvals", "policy", "comment")
"""Fields other rules record on an interrupt (A2: each answer in `approvals` with its `comment`);
listed as they are when present."""


@dataclass(frozen=True)
class InboxFilters:
    """`GET /v1/interrupts`'s query, already checked by the route (400 naming the parameter)."""

    status: InboxStatus = "open"
    agent_id: str | None = None
    reason: str | None = None
    older_than: int | None = None  # seconds
    expiring_within: int | None = None  # seconds
    approver_me: bool = False


def may_answer(caller: Caller, interrupt: Interrupt) -> bool:
    """Whether the caller may resume the interrupt: the origin rule (R17) and its approver policy
    (A2, with the escalation's approvers once it has escalated, A5), as the resume checks them."""
    return refusal(caller, interrupt) is None


def inbox(store: Interrupts, sealer: Sealer, caller: Caller, limit: int, cursor: str | None,
          filters: InboxFilters | None = None, clock: Clock = time.time) -> dict[str, Any]:
    """One page, newest first. The cursor is sealed under the deployment's key and bound to the
    tenant and to the status it lists (the index it pages: its purpose names the status): opaque,
    and refused if altered or reused for another status."""
    filters = filters or InboxFilters()
    purpose = "inbox-cursor" if filters.status == "open" else f"inbox-cursor:{filters.status}"
    start = opened_cursor(sealer, purpose, caller, cursor)
    now = clock()
    query = InboxQuery(
        status=filters.status, agent_id=filters.agent_id, reason=filters.reason,
        created_before=iso_ms(now - filters.older_than) if filters.older_than is not None else None,
        expiring_by=iso_ms(now + filters.expiring_within) if filters.expiring_within is not None else None)
    rows, last = store.inbox(caller.tenant, limit, start, query, lambda row: _visible(caller, filters, row))
    return {"interrupts": [listing(row, caller) for row in rows],
            "next_cursor": sealed_cursor(sealer, purpose, caller, last)}


def _visible(caller: Caller, filters: InboxFilters, row: InboxRow) -> bool:
    """What the caller may see (its bound session, its own sessions) and, with `approver=me`, answer."""
    if caller.session_id and row.session_id != caller.session_id:
        return False
    if not caller.owns(row.session_id, row.interrupt.end_user):
        return False
    return not filters.approver_me or (row.interrupt.status == "open" and may_answer(caller, row.interrupt))


def listing(row: InboxRow, caller: Caller) -> dict[str, Any]:
    """An inbox item: the interrupt as the view shows it, where it lives, and its audit trail;
    open, what this caller may do with it; closed, how it was decided (`closed_fields`)."""
    interrupt = row.interrupt
    out: dict[str, Any] = {"session_id": row.session_id, **interrupt.view(), "owner": interrupt.owner,
                           "status": interrupt.status}
    if interrupt.status == "open":
        out.update(open_fields(caller, interrupt))
    if row.agent_id:
        out["agent_id"] = row.agent_id
    for key in AUDIT_FIELDS:  # the view's own (read from the item as it is now) come first
        if row.body.get(key) is not None:
            out.setdefault(key, row.body[key])
    if interrupt.status != "open":
        out.update(closed_fields(interrupt))
    return shown_to(caller, out)


def closed_fields(interrupt: Interrupt) -> dict[str, Any]:
    """How a closed interrupt was decided: the answer (`resolution`), its verdict and channel, who
    decided and when, how long it took, whether the worker has the answer yet (`delivery`), and
    its signed approval receipt once its wake made one."""
    decided = approvals.outcome(interrupt)
    out = {"resolved_at": interrupt.resolved_at, "responder": decided.fields()["responder"],
           "resolution": interrupt.resolution, "verdict": decided.verdict, "channel": decided.channel,
           "delivery": interrupt.delivery or "waiting",
           "decision_secs": decision_secs(interrupt.created_at, interrupt.resolved_at), **readable(interrupt)}
    if interrupt.receipt is not None:
        out["receipt"] = interrupt.receipt
    return out


def decision_secs(created_at: str, resolved_at: str | None) -> float | None:
    """The time to decision, in seconds (milliseconds kept)."""
    if not resolved_at:
        return None
    delta = _parse(resolved_at) - _parse(created_at)
    return round(delta, 3)


def _parse(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
