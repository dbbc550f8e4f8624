"""The interrupt writes outside a commit: the resume (R7) and a quorum's answer (A2), each one
conditional UpdateItem of the interrupt item alone."""

from __future__ import annotations

import json

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.codec import Codec
from holdpoint.aws.ddb.expr import (
    AttributeValue,
    Compare,
    Cond,
    Expr,
    Item,
    Never,
    OneOf,
    Update,
    absent_or,
    all_of,
    eq,
    n,
    s,
)
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import ConditionFailed
from holdpoint.core.answers import Answer
from holdpoint.core.edits import Edit
from holdpoint.core.interrupts import Checked, refused
from holdpoint.core.state import Interrupt
from holdpoint.ports import InterruptRef, Resolve, ResolveOutcome


def same_generation(generation: int) -> Cond:
    """An item written before `generation` was a top-level attribute has none; raising it again
    rewrites the item with one, so a re-raise is still seen."""
    return absent_or("generation", eq("generation", n(generation)))


def answerable(checked: Checked) -> Cond:
    """Still open, to an origin the caller's outranks, of the owner, generation and answers checked,
    and not yet at its expiry."""
    parts: list[Cond] = [eq("status", s("open"))]
    origins = tuple(s(o) for o in checked.allowed_origins)
    parts.append(OneOf("origin", origins) if origins else Never())
    if checked.owner is not None:
        parts.append(eq("owner", s(checked.owner)))
    if checked.generation is not None:
        parts.append(same_generation(checked.generation))
    if checked.seen is not None:
        counted = Compare("approvals", "=", n(checked.seen), size=True)
        parts.append(absent_or("approvals", counted) if checked.seen == 0 else counted)
    if checked.now is not None:  # R16: the deadline is in the write, so an answer racing it loses
        parts.append(absent_or("expires_at", Compare("expires_at", ">", s(checked.now))))
    return all_of(parts)


class InterruptWrites:
    def __init__(self, table: Table, codec: Codec) -> None:
        self.table, self.codec = table, codec

    def key(self, tenant: str, session_id: str, interrupt_id: str) -> Item:
        return {"PK": s(k.session_pk(tenant, session_id)), "SK": s(f"{k.PREFIX[Interrupt]}{interrupt_id}")}

    def key_of(self, where: InterruptRef) -> Item:
        return self.key(where.tenant, where.session_id, where.interrupt_id)

    def read(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None:
        """The interrupt as it is now (one strongly consistent GetItem)."""
        item = self.table.get(self.key(tenant, session_id, interrupt_id))
        return self.codec.interrupt(item) if item else None

    def update(self, key: Item, update: Update, condition: Cond) -> tuple[Item | None, Item]:
        """(the item as written, {}) or, when the condition fails, (None, the item as it was; {} if none)."""
        try:
            return self.table.update(key, **Expr().request(update=update, condition=condition)), {}
        except ConditionFailed as failed:
            return None, failed.item

    def answer(self, key: Item, update: Update, checked: Checked, *, approval: Answer | None,
               done: ResolveOutcome, edit: Edit | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
        """The one conditional UpdateItem of an answer: `update` (with `approval` appended to the
        interrupt's answers, and `edit` to its edits, A3) if everything the caller checked still
        holds; on a failed condition, why, from the item as it was."""
        update.increments[k.REV] = 1
        if approval is not None:
            update.appends["approvals"] = {"L": [s(json.dumps(approval.to_item()))]}
        if edit is not None:
            update.appends["edits"] = {"L": [s(json.dumps(edit.to_item()))]}
        new, old = self.update(key, update, answerable(checked))
        if new is None:
            return self.unresolved(old, checked)
        return done, self.codec.interrupt(new)

    def unresolved(self, old: Item, checked: Checked) -> tuple[ResolveOutcome, Interrupt | None]:
        """Why the answer's conditional update failed, from the item as it was (`refused`: the
        condition is that rule's, so one of its refusals holds)."""
        found = self.codec.interrupt(old) if old else None
        return refused(found, checked) or ("forbidden", found)

    def resolve(self, key: Item, change: Resolve) -> tuple[ResolveOutcome, Interrupt | None]:
        """R7: `open -> resolved` exactly once, out of the open inbox (A6: kept until `kept_until`)."""
        sets: dict[str, AttributeValue] = {
            "status": s("resolved"), "resolution": s(json.dumps(change.resolution)),
            "responder": s(json.dumps(change.responder.to_item())), "resolved_at": s(change.at)}
        if change.kept_until is not None:
            sets[k.TTL] = n(change.kept_until)
        return self.answer(key, Update(sets=sets, removes=["GSI1PK", "GSI1SK"]), change.checked,
                           approval=change.approval, done="resolved", edit=change.edit)
