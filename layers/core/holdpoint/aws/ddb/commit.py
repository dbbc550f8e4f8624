"""A step's commit: what it changed, in one transaction conditioned on the header's version, with
the quota counters it moves (docs/SECURITY.md, "Quotas")."""

from __future__ import annotations

import time
from dataclasses import asdict

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.cache import Reads, canonical
from holdpoint.aws.ddb.codec import (
    Codec,
    agent_changed,
    answered_in_place,
    done_through,
    listing_attrs,
    record_key,
    snapshot_of,
)
from holdpoint.aws.ddb.expr import Compare, Cond, Exists, Expr, Item, TransactOp, Update, Write, absent_or, eq, n, s
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import Cancelled, ConditionFailed
from holdpoint.core import interrupts as rules
from holdpoint.core import quotas
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.state import Decision, SessionState
from holdpoint.ports import Conflict, Interfered, TooManyChanges

Counted = tuple[TransactOp, str, int]
"""A quota counter's op, the limit it enforces and the limit's value."""


def put(item: Item, condition: Cond | None = None) -> TransactOp:
    return {"Put": Expr().into(Write(Item=item), condition=condition)}


def new_item() -> Cond:
    return Exists("SK", present=False)


class Committer:
    def __init__(self, table: Table, codec: Codec, reads: Reads, limits: quotas.Quotas) -> None:
        self.table, self.codec, self.reads, self.limits = table, codec, reads, limits

    def commit(self, state: SessionState) -> int:
        """Write what the step changed in one transaction, conditioned on the header version (and,
        with a warm cache, on the tail's sum: aws/ddb/warm.py). Any failure forgets what the reads
        keep about the session, so the reload after a conflict reads everything."""
        if not state.changed:
            return 0
        snap, h = snapshot_of(state), state.header
        pk = k.session_pk(h.tenant, h.session_id)
        ops: list[TransactOp] = []
        # The agent config in force lives in its own item, written only when it changes, so a
        # step does not rewrite (and pay for) a large system prompt every time.
        if agent_changed(state):
            ops.append(put(self.codec.agent_item(pk, h.agent_item)))
        # A head-only load has no tree to read the status from: its commit keeps the status it loaded.
        status = snap.listed_status if snap.head_only and snap.listed_status else rules.status(state)
        header = self.codec.header_item(pk, state, listing_attrs(state, status))
        header_at = len(ops)
        ops.append({})
        tail: dict[str, str] = {}
        for node in state.new_nodes:
            item = self.codec.node_item(pk, node)
            tail[item["SK"]["S"]] = canonical(item)
            ops.append(put(item, new_item()))
        revs = {}
        done = done_through(state)
        header[k.DONE_THROUGH] = n(done)
        for dirty_key, record in state.dirty.items():
            if isinstance(record, Decision) and answered_in_place(state, record, done):
                continue
            rev = snap.revs.get(record_key(record))
            item = self.codec.record_item(pk, record, rev or 0, h)
            revs[dirty_key] = (rev or 0) + 1
            if k.is_tail(item["SK"]["S"]):
                tail[item["SK"]["S"]] = canonical(item)
            ops.append(put(item, new_item() if rev is None else eq(k.REV, n(rev))))
        if state.events:
            ops.append(put(self.codec.events_item(pk, state.events), new_item()))
        stamp = self.reads.prepare(pk, exists=state.exists, version=h.version, written=tail)
        header.update(stamp.attrs)
        ops[header_at] = put(header, stamp.condition)
        held = quotas.slots(state)
        counted = self.quota_ops(state, held)
        ops.extend(op for op, _, _ in counted)
        if len(ops) > k.MAX_TRANSACT_ITEMS:
            raise TooManyChanges(f"a step may change at most {k.MAX_TRANSACT_ITEMS} items, this one {len(ops)}")
        try:
            self.table.transact(ops)
        except Cancelled as exc:
            self.reads.forget(pk)
            refused = quota_refusal(exc.reasons, len(ops) - len(counted), counted)
            if refused is not None:
                raise refused from None
            if "TransactionConflict" in exc.reasons and "ConditionalCheckFailed" not in exc.reasons:
                raise Interfered(str(exc)) from exc
            raise Conflict(str(exc)) from exc
        except ConditionFailed as exc:
            self.reads.forget(pk)
            raise Conflict("the session changed") from exc
        except BaseException:
            self.reads.forget(pk)  # the write may or may not have happened
            raise
        h.version += 1
        state.quota_slots = held
        snap.agent_item, snap.listed_status, snap.done_through = h.agent_item, status, done
        snap.revs.update(revs)
        snap.pending = {d.id: asdict(d) for d in state.decisions.values()
                        if d.status == "pending" and d.order > done}
        self.reads.committed(pk, header, stamp.after)
        return len(ops)

    def quota_ops(self, state: SessionState, held: frozenset[str]) -> list[Counted]:
        """The quota counters the commit moves (`quotas.open_counters`, `quotas.session_counters`):
        each an `ADD` on its item in the tenant's quota partition, conditioned to stay within its
        limit when it grows; a principal's share is an item of its own beside the tenant's."""
        out: list[Counted] = []
        tenant = state.header.tenant
        for counter in quotas.open_counters(state, held, self.limits):
            sk = k.OPEN_SK if counter.principal is None else k.principal_open_sk(counter.principal)
            condition: Cond | None = None
            if counter.delta > 0:
                condition = absent_or("n", Compare("n", "<=", n(counter.allowed - counter.delta)))
            out.append((counter_op(tenant, sk, Update(adds={"n": n(counter.delta)}), condition),
                        counter.limit, counter.allowed))
        second = int(time.time())
        for counter in quotas.session_counters(state, self.limits):
            sk = k.sessions_second_sk(second, counter.principal)
            update = Update(adds={"n": n(1)}, sets={k.TTL: n(second + k.SESSION_COUNT_TTL)})
            condition = absent_or("n", Compare("n", "<", n(counter.allowed)))
            out.append((counter_op(tenant, sk, update, condition), counter.limit, counter.allowed))
        return out


def counter_op(tenant: str, sk: str, update: Update, condition: Cond | None) -> TransactOp:
    key = {"PK": s(k.quota_pk(tenant)), "SK": s(sk)}
    return {"Update": Expr().into(Write(Key=key), update=update, condition=condition)}


def quota_refusal(reasons: list[str], first: int, counted: list[Counted]) -> QuotaExceeded | None:
    """A transaction cancelled by a quota counter's condition alone (its cancellation reasons say
    which item failed, in the order written; the counters are last): the limit it enforces. A
    cancellation that any other item shares is a conflict: reload and recompute."""
    if not counted or len(reasons) < first + len(counted) or any(code != "None" for code in reasons[:first]):
        return None
    for code, (_, limit, allowed) in zip(reasons[first:], counted, strict=True):
        if code == "ConditionalCheckFailed":
            return QuotaExceeded(limit, allowed)
    return None
