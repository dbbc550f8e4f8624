"""The park records (`ports.ParkRecords`): one small item per raise of an interrupt, `G#{id}#{generation}`
in the session's partition (sorting before the header, so no load reads it), kept by the parking
alone. Each field is set by one conditional UpdateItem and never changed after, so a retried or
duplicated write fails its condition and writes nothing. The item expires past the longest park;
nothing deletes it sooner but `drop` (the TTL's delete is free)."""

from __future__ import annotations

import time
from contextlib import suppress

from holdpoint import tracing
from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.expr import (
    AttributeValue,
    Compare,
    Cond,
    Exists,
    Expr,
    Item,
    Update,
    absent_or,
    all_of,
    eq,
    n,
    s,
)
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import ConditionFailed
from holdpoint.ports import Clock, ParkRecord


def record_of(item: Item) -> ParkRecord:
    return ParkRecord(handle=item[k.EXECUTION]["S"] if k.EXECUTION in item else None,
                      waits=int(item[k.WAITS]["N"]) if k.WAITS in item else 0,
                      token=item[k.TASK_TOKEN]["S"] if k.TASK_TOKEN in item else None,
                      trace=item[k.TRACE]["S"] if k.TRACE in item else None)


class ParkRecords:
    def __init__(self, table: Table, clock: Clock = time.time) -> None:
        self.table, self.clock = table, clock

    def key(self, tenant: str, session_id: str, interrupt_id: str, generation: int) -> Item:
        return {"PK": s(k.session_pk(tenant, session_id)), "SK": s(k.park_sk(interrupt_id, generation))}

    def read(self, tenant: str, session_id: str, interrupt_id: str, generation: int) -> ParkRecord | None:
        """The raise's record as it is now (one strongly consistent GetItem)."""
        item = self.table.get(self.key(tenant, session_id, interrupt_id, generation))
        return record_of(item) if item else None

    def _set(self, key: Item, attr: str, value: AttributeValue, condition: Cond,
             also: Item | None = None) -> None:
        """One conditional UpdateItem; a failed condition is the retry or duplicate, a no-op."""
        update = Update(sets={attr: value, **(also or {}), k.TTL: n(int(self.clock()) + k.PARK_TTL_SECONDS)})
        with suppress(ConditionFailed):
            self.table.update(key, **Expr().request(update=update, condition=condition))

    def started(self, tenant: str, session_id: str, interrupt_id: str, generation: int, handle: str) -> None:
        """The execution's ARN, with the trace of the hop that started it (the resume joins it)."""
        trace = tracing.outgoing()
        self._set(self.key(tenant, session_id, interrupt_id, generation), k.EXECUTION, s(handle),
                  Exists(k.EXECUTION, present=False), {k.TRACE: s(trace)} if trace else None)

    def waiting(self, tenant: str, session_id: str, interrupt_id: str, generation: int, attempt: int) -> None:
        """The refusal `attempt`, unless the park started or a later refusal is recorded already."""
        condition = all_of([Exists(k.EXECUTION, present=False), absent_or(k.WAITS, Compare(k.WAITS, "<", n(attempt)))])
        self._set(self.key(tenant, session_id, interrupt_id, generation), k.WAITS, n(attempt), condition)

    def keep_token(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None:
        self._set(self.key(tenant, session_id, interrupt_id, generation), k.TASK_TOKEN, s(token),
                  Exists(k.TASK_TOKEN, present=False))

    def drop(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None:
        """Leave nothing behind for a park message naming no interrupt (only the item `hold` made)."""
        condition = all_of([eq(k.TASK_TOKEN, s(token)), Exists(k.EXECUTION, present=False)])
        with suppress(ConditionFailed):
            self.table.delete(self.key(tenant, session_id, interrupt_id, generation),
                              **Expr().request(condition=condition))
