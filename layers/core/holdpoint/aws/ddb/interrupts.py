"""The interrupt writes outside a commit: the resume (R7), a quorum's answer (A2) and the started
park's execution, each one conditional UpdateItem of the interrupt item alone, and the park
message's task token, one conditional PutItem of its own item."""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.codec import Codec
from holdpoint.aws.ddb.expr import Compare, Cond, Exists, Expr, Never, OneOf, Update, absent_or, all_of, eq, n, s
from holdpoint.aws.ddb.table import ConditionFailed, Table
from holdpoint.core.interrupts import Checked, write_refusal
from holdpoint.core.state import Interrupt
from holdpoint.ports import ResolveOutcome


def same_generation(generation: int) -> Cond:
    """An item written before `generation` was a top-level attribute has none; raising it again
    rewrites the item with one, so a re-raise is still seen."""
    return absent_or("generation", eq("generation", n(generation)))


def answerable(checked: Checked) -> Cond:
    """Still open, to an origin the caller's outranks, of the owner, generation and answers checked."""
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
    return all_of(parts)


class InterruptWrites:
    def __init__(self, table: Table, codec: Codec) -> None:
        self.table, self.codec = table, codec

    def key(self, tenant: str, session_id: str, interrupt_id: str) -> dict[str, Any]:
        return {"PK": s(k.session_pk(tenant, session_id)), "SK": s(f"{k.PREFIX[Interrupt]}{interrupt_id}")}

    def read(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None:
        """The interrupt as it is now (one strongly consistent GetItem)."""
        item = self.table.get(self.key(tenant, session_id, interrupt_id))
        return self.codec.interrupt(item) if item else None

    def update(self, key: dict[str, Any], update: Update,
               condition: Cond) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(the item as written, {}) or, when the condition fails, (None, the item as it was; {} if none)."""
        try:
            return self.table.update(key, **Expr().request(update=update, condition=condition)), {}
        except ConditionFailed as failed:
            return None, failed.item

    def answer(self, key: dict[str, Any], update: Update, checked: Checked, *, approval: dict[str, Any] | None,
               done: ResolveOutcome) -> tuple[ResolveOutcome, Interrupt | None]:
        """The one conditional UpdateItem of an answer: `update` (with `approval` appended to the
        interrupt's answers) if everything the caller checked still holds; on a failed condition,
        why, from the item as it was."""
        update.increments[k.REV] = 1
        if approval is not None:
            update.appends["approvals"] = {"L": [s(json.dumps(approval))]}
        new, old = self.update(key, update, answerable(checked))
        if new is None:
            return self.unresolved(old, checked)
        return done, self.codec.interrupt(new)

    def unresolved(self, old: dict[str, Any], checked: Checked) -> tuple[ResolveOutcome, Interrupt | None]:
        """Why the answer's conditional update failed, from the item as it was (`write_refusal`;
        the condition is that rule's, so one of its refusals holds)."""
        found = self.codec.interrupt(old) if old else None
        why = write_refusal(found, checked) or "forbidden"
        return why, (None if why == "not_found" else found)

    def resolve(self, key: dict[str, Any], *, resolution: Any, responder: dict[str, Any], at: str,
                kept_until: int | None, checked: Checked,
                approval: dict[str, Any] | None) -> tuple[ResolveOutcome, Interrupt | None]:
        """R7: `open -> resolved` exactly once, out of the open inbox (A6: kept until `kept_until`)."""
        sets: dict[str, Any] = {"status": s("resolved"), "resolution": s(json.dumps(resolution)),
                                "responder": s(json.dumps(responder)), "resolved_at": s(at)}
        if kept_until is not None:
            sets[k.TTL] = n(kept_until)
        return self.answer(key, Update(sets=sets, removes=["GSI1PK", "GSI1SK"]), checked, approval=approval,
                           done="resolved")

    def token_key(self, tenant: str, session_id: str, interrupt_id: str) -> dict[str, Any]:
        return {"PK": s(k.session_pk(tenant, session_id)), "SK": s(f"{k.TOKEN}{interrupt_id}")}

    def with_token(self, interrupt: Interrupt | None, token_item: dict[str, Any] | None) -> Interrupt | None:
        """The interrupt with its task token, if its token item holds one for this raise (an item
        of no generation is an execution's older than generations). An interrupt item written
        before the token had its own item may still carry it as an attribute."""
        if interrupt is None or not token_item or k.PARKING_KEY not in token_item:
            return interrupt
        if "generation" in token_item and int(token_item["generation"]["N"]) != interrupt.generation:
            return interrupt
        interrupt.parking_key = token_item[k.PARKING_KEY]["S"]
        return interrupt

    def read_with_token(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None:
        """The interrupt and its task token as they are now: one strongly consistent BatchGetItem."""
        key, token_key = self.key(tenant, session_id, interrupt_id), self.token_key(tenant, session_id, interrupt_id)
        items = {item["SK"]["S"]: item for item in self.table.batch_get([key, token_key], consistent=True)}
        found = items.get(key["SK"]["S"])
        return self.with_token(self.codec.interrupt(found) if found else None, items.get(token_key["SK"]["S"]))

    def token_of(self, tenant: str, session_id: str, interrupt: Interrupt | None) -> Interrupt | None:
        """`interrupt` (just written) with its task token, read after the write (strongly
        consistent): a park message's token stored before the write is seen here, and one stored
        after it sees the write (`keep_parking_key` reads the interrupt after storing)."""
        if interrupt is None or interrupt.parking_key:
            return interrupt
        return self.with_token(interrupt, self.table.get(self.token_key(tenant, session_id, interrupt.interrupt_id)))

    def keep_parking_key(self, tenant: str, session_id: str, interrupt_id: str, token: str,
                         generation: int | None, now: float) -> Interrupt | None:
        """Keep the ParkBranch execution's task token in its own small item (one conditional
        PutItem: the interrupt item, its Inbox entry and any commit that read it are untouched),
        then read the interrupt. The token of a later raise replaces an earlier one's; the same one
        again, or an earlier raise's, fails the condition and writes nothing. Stored before the
        read, so a resume that resolves after the read finds the token (`token_of`). The item
        expires past the longest park, when its token is spent; nothing deletes it sooner (the
        TTL's delete is free). None when there is no such interrupt."""
        item = {**self.token_key(tenant, session_id, interrupt_id), k.PARKING_KEY: s(token),
                k.TTL: n(int(now) + k.TOKEN_TTL_SECONDS)}
        condition: Cond = Exists("SK", present=False)
        if generation is not None:
            item["generation"] = n(generation)
            condition = condition | absent_or("generation", Compare("generation", "<", n(generation)))
        with suppress(ConditionFailed):
            self.table.put(item, **Expr().request(condition=condition))
        found = self.read_with_token(tenant, session_id, interrupt_id)
        if found is None:  # no such interrupt (or session): leave nothing behind
            with suppress(ConditionFailed):
                self.table.delete(self.token_key(tenant, session_id, interrupt_id),
                                  **Expr().request(condition=eq(k.PARKING_KEY, s(token))))
        return found

    def keep_parked_as(self, key: dict[str, Any], parked_as: str, generation: int) -> Interrupt | None:
        """Mark the interrupt parked as the execution `start_park` began, bumping its `rev` so an
        engine commit that read the item before the mark conflicts. An interrupt already marked,
        or raised again since (another generation), fails the condition and writes nothing; None
        when there is no such interrupt."""
        condition = all_of([Exists("SK"), Exists(k.PARKED_AS, present=False), same_generation(generation)])
        update = Update(sets={k.PARKED_AS: s(parked_as)}, increments={k.REV: 1})
        new, old = self.update(key, update, condition)
        item = new if new is not None else old
        return self.codec.interrupt(item) if item else None
