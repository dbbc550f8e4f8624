"""`ports.SessionStore` in one process: the DynamoDB store's promises (every change conditional on
what was read, R7's exactly-once resolve, quorum answers, the quotas, the size limits, opaque
cursors) kept in dicts under one lock. Records are stored as JSON text, as the table keeps them,
so a caller never shares an object with the store and what cannot be stored there cannot here."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import MISSING, asdict, fields, replace
from typing import TYPE_CHECKING, Any

from holdpoint.core import interrupts as rules
from holdpoint.core import quotas
from holdpoint.core.answers import Answer
from holdpoint.core.edits import Edit
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.identity import IdentityProvider
from holdpoint.core.interrupts import Checked, refused
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Event, Header, Interrupt, SessionState
from holdpoint.core.tree import Node, Tree
from holdpoint.ports import (
    MAX_SEQ,
    AddAnswer,
    ApiKey,
    Conflict,
    InboxQuery,
    InboxRow,
    InterruptRef,
    Resolve,
    ResolveOutcome,
    SessionFilters,
    SessionRow,
    SessionStore,
    TooLarge,
    TooManyChanges,
)
from holdpoint_local.memory.records import (
    ITEM_BYTES,
    KINDS,
    MAX_TRANSACT_ITEMS,
    TRANSACTION_BYTES,
    Kept,
    Session,
    Snapshot,
    as_text,
    body_of,
    interrupt_bytes,
    interrupt_of,
    item_bytes,
    listed,
    listed_session,
    page,
    record_of,
)


class MemoryStore:
    """Sessions, agents and API keys in memory (`ports.SessionStore`); `limits` as the DynamoDB
    store's (by default the environment's, `HOLDPOINT_QUOTA_*`)."""

    def __init__(self, limits: quotas.Quotas | None = None, clock: Callable[[], float] = time.time) -> None:
        self.limits = limits or quotas.from_env(os.environ)
        self.clock = clock
        self._lock = threading.RLock()
        self._sessions: dict[tuple[str, str], Session] = {}
        self._agents: dict[tuple[str, str], str] = {}
        self._keys: dict[str, ApiKey | None] = {}  # None: revoked
        self._providers: dict[str, IdentityProvider] = {}  # by tenant
        self._open: dict[Any, int] = {}  # interrupts holding a slot: (tenant, principal or None) -> n
        self._created: dict[Any, int] = {}  # top-level sessions: (tenant, second, principal or None) -> n

    # --- sessions --------------------------------------------------------------------

    def load(self, tenant: str, session_id: str, *, head_only: bool = False) -> SessionState | None:
        with self._lock:
            kept = self._sessions.get((tenant, session_id))
            if kept is None:
                return None
            header = record_of(Header, json.loads(kept.header))
            header.version, header.agent_item = kept.version, json.loads(kept.agent)
            snap = Snapshot(head_only=head_only, listed_status=kept.status)
            state = SessionState(header=header, tree=Tree(head_id=header.head_id), snapshot=snap)
            for (kind, rid), record in sorted(kept.records.items(), key=lambda r: r[0][1]):
                if head_only and kind != "Interrupt":
                    continue
                self._put(state, kind, json.loads(record.text))
                snap.revs[(kind, rid)] = record.rev
            if not head_only:
                for nid in sorted(kept.nodes):
                    body = json.loads(kept.nodes[nid])
                    state.tree.add(Node(id=body["id"], parent_id=body.get("parent_id"), message=body["message"],
                                        order=body.get("order", 0)))
        state.quota_slots = quotas.slots(state)
        state.now = self.clock()
        return state

    @staticmethod
    def _put(state: SessionState, kind: str, body: dict[str, Any]) -> None:
        record = record_of(KINDS[kind], body)
        if kind == "Interrupt":
            state.interrupts[record.interrupt_id] = record
        else:
            getattr(state, {"Call": "calls", "Decision": "decisions", "Turn": "turns"}[kind])[record.id] = record

    def commit(self, state: SessionState) -> int:
        """Everything the step changed at once, if the header is at the version loaded and every
        record at the revision loaded; else `Conflict` and nothing written."""
        if not state.changed:
            return 0
        snap = state.snapshot if isinstance(state.snapshot, Snapshot) else Snapshot()
        state.snapshot = snap
        h = state.header
        status = snap.listed_status if snap.head_only and snap.listed_status else rules.status(state)
        header_body = asdict(replace(h, agent_item=None))  # the agent is kept apart, as its own item
        for kept_apart in ("version", "agent_item", "_agent"):
            header_body.pop(kept_apart, None)
        agent = as_text(h.agent_item)
        header_text = as_text(header_body)
        written = [(key, type(record).__name__, as_text(body_of(record))) for key, record in state.dirty.items()]
        nodes = {node.id: as_text({"id": node.id, "parent_id": node.parent_id, "message": node.message,
                                 "order": node.order}) for node in state.new_nodes}
        events = {e.seq: as_text(e.wire()) for e in state.events}
        held = quotas.slots(state)
        with self._lock:
            kept = self._sessions.get((h.tenant, h.session_id))
            agent_op = kept is None or kept.agent != agent
            counters = self._quota_checks(state, held)
            ops = 1 + int(agent_op) + len(nodes) + len(written) + int(bool(events)) + len(counters)  # one log item
            if ops > MAX_TRANSACT_ITEMS:
                raise TooManyChanges(f"a step may change at most {MAX_TRANSACT_ITEMS} items, this one {ops}")
            self._check_sizes(header_text, agent if agent_op else "", written, nodes, events)
            self._check_conditions(state, snap, kept, written, nodes, events)
            for apply in counters:  # every other condition held: a refusal here is the quota's
                apply(False)
            for apply in counters:
                apply(True)
            kept = self._write(state, kept, status, header_text, agent, written, nodes, events)
        h.version += 1
        state.quota_slots = held
        snap.listed_status = status
        for key, _, _ in written:
            snap.revs[key] = kept.records[key].rev
        return ops

    def _check_sizes(self, header: str, agent: str, written: list[tuple[tuple[str, str], str, str]],
                     nodes: dict[str, str], events: dict[int, str]) -> None:
        sizes = [item_bytes(header), item_bytes(agent)]
        sizes += [interrupt_bytes(json.loads(text)) if kind == "Interrupt" else item_bytes(text)
                  for _, kind, text in written]
        sizes += [item_bytes(text) for text in nodes.values()]
        if events:  # one event-log item holds the commit's events
            sizes.append(item_bytes("[" + ",".join(events.values()) + "]"))
        if max(sizes) > ITEM_BYTES or sum(sizes) > TRANSACTION_BYTES:
            raise TooLarge("the item is too large to record")

    def _check_conditions(self, state: SessionState, snap: Snapshot, kept: Session | None,
                          written: list[tuple[tuple[str, str], str, str]], nodes: dict[str, str],
                          events: dict[int, str]) -> None:
        if not state.exists:
            if kept is not None:
                raise Conflict("the session exists")
            return
        if kept is None or kept.version != state.header.version:
            raise Conflict("the session changed")
        if any(nid in kept.nodes for nid in nodes) or any(seq in kept.events for seq in events):
            raise Conflict("the session changed")
        for key, kind, _ in written:
            rev = snap.revs.get((kind, key[1]))
            found = kept.records.get(key)
            if (found is None) != (rev is None) or (found is not None and found.rev != rev):
                raise Conflict("the session changed")

    def _quota_checks(self, state: SessionState, held: frozenset[str]) -> list[Callable[[bool], None]]:
        """The quota counters the commit moves (`quotas.open_counters`, `quotas.session_counters`),
        as the DynamoDB store counts them: each checks (False) or applies (True) its change."""
        h, limits = state.header, self.limits
        out: list[Callable[[bool], None]] = []
        for counter in quotas.open_counters(state, held, limits):
            out.append(self._counted(self._open, (h.tenant, counter.principal), counter, grows=counter.delta > 0))
        second = int(self.clock())
        for counter in quotas.session_counters(state, limits):
            out.append(self._counted(self._created, (h.tenant, second, counter.principal), counter, grows=True))
        return out

    @staticmethod
    def _counted(counts: dict[Any, int], key: Any, counter: quotas.Counter, *, grows: bool) -> Callable[[bool], None]:
        def check(apply: bool) -> None:
            now = counts.get(key, 0)
            if grows and now > counter.allowed - counter.delta:
                raise QuotaExceeded(counter.limit, counter.allowed)
            if apply:
                counts[key] = now + counter.delta

        return check

    def _write(self, state: SessionState, kept: Session | None, status: str, header: str, agent: str,
               written: list[tuple[tuple[str, str], str, str]], nodes: dict[str, str],
               events: dict[int, str]) -> Session:
        h = state.header
        owner = (h.identity or {}).get("id")
        if kept is None:
            kept = Session(h.tenant, h.session_id, 0, header, agent, status, h.created_at, h.agent_id,
                           str(owner) if owner else None, h.end_user, bool(h.ancestry))
            self._sessions[(h.tenant, h.session_id)] = kept
        kept.version, kept.header, kept.agent, kept.status = h.version + 1, header, agent, status
        kept.agent_id, kept.owner, kept.sub_agent = h.agent_id, str(owner) if owner else None, bool(h.ancestry)
        kept.attention = dict(h.attention) if h.attention else None
        kept.nodes.update(nodes)
        kept.events.update(events)
        for key, _, text in written:
            found = kept.records.get(key)
            kept.records[key] = Kept((found.rev if found else 0) + 1, text)
        return kept

    def events(self, tenant: str, session_id: str, after_seq: int, limit: int) -> list[Event]:
        if after_seq >= MAX_SEQ:
            return []
        with self._lock:
            kept = self._sessions.get((tenant, session_id))
            if kept is None:
                return []
            seqs = sorted(seq for seq in kept.events if max(after_seq, 0) < seq <= MAX_SEQ)[:limit]
            return [record_of(Event, json.loads(kept.events[seq])) for seq in seqs]

    def session_exists(self, tenant: str, session_id: str, end_user: str | None = None) -> bool:
        with self._lock:
            kept = self._sessions.get((tenant, session_id))
            if kept is None:
                return False
            return end_user is None or kept.end_user == end_user

    # --- interrupts --------------------------------------------------------------------

    def _interrupt(self, tenant: str, session_id: str, interrupt_id: str) -> tuple[Session, Kept] | None:
        kept = self._sessions.get((tenant, session_id))
        record = kept.records.get(("Interrupt", interrupt_id)) if kept is not None else None
        return (kept, record) if kept is not None and record is not None else None

    def read_interrupt(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None:
        with self._lock:
            found = self._interrupt(tenant, session_id, interrupt_id)
            return interrupt_of(json.loads(found[1].text)) if found else None

    def resolve_interrupt(self, change: Resolve) -> tuple[ResolveOutcome, Interrupt | None]:
        """R7: `open -> resolved` exactly once."""
        changes: dict[str, Any] = {"status": "resolved", "resolution": change.resolution,
                                   "responder": change.responder.to_item(), "resolved_at": change.at}
        if change.kept_until is not None:
            changes["kept_until"] = change.kept_until
        return self._answer(change.where, change.checked, changes, change.approval, "resolved", change.edit)

    def record_approval(self, change: AddAnswer) -> tuple[ResolveOutcome, Interrupt | None]:
        """A2: one answer that does not yet decide the interrupt."""
        return self._answer(change.where, change.checked, {}, change.approval, "recorded", change.edit)

    def _answer(self, where: InterruptRef, checked: Checked, changes: dict[str, Any], approval: Answer | None,
                done: ResolveOutcome, edit: Edit | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
        """One conditional write of the interrupt alone, or why not (`refused`, as the DynamoDB store says it)."""
        with self._lock:
            found = self._interrupt(where.tenant, where.session_id, where.interrupt_id)
            if found is None:
                return "noop", None
            record = found[1]
            data = json.loads(record.text)
            no = refused(interrupt_of(data), checked)
            if no is not None:
                return no
            data.update(json.loads(as_text(changes)))
            if approval is not None:
                data["approvals"] = [*data.get("approvals", []), approval.to_item()]
            if edit is not None:  # A3: appended in the same write as the approval it binds
                data["edits"] = [*data.get("edits", []), edit.to_item()]
            if interrupt_bytes(data) > ITEM_BYTES:
                raise TooLarge("the item is too large to record")
            record.rev, record.text = record.rev + 1, as_text(data)
            return done, interrupt_of(data)

    # --- listings ----------------------------------------------------------------------

    def inbox(self, tenant: str, limit: int, cursor: str | None, query: InboxQuery | None = None,
              keep: Callable[[InboxRow], bool] | None = None) -> tuple[list[InboxRow], str | None]:
        """A6: the tenant's interrupts newest first, by status and the query's filters."""
        query = query or InboxQuery()
        rows: list[tuple[str, InboxRow]] = []
        with self._lock:
            for kept in self._sessions.values():
                if kept.tenant != tenant:
                    continue
                for (kind, _), record in kept.records.items():
                    if kind != "Interrupt":
                        continue
                    data = json.loads(record.text)
                    body = {key: v for key, v in data.items() if key != "approvals"
                            and v != INTERRUPT_DEFAULTS.get(key, ...)}
                    row = InboxRow(kept.session_id, kept.agent_id, interrupt_of(data), body)
                    order = f"{row.interrupt.created_at}#{kept.session_id}#{row.interrupt.interrupt_id}"
                    if listed(query, row, order) and (keep is None or keep(row)):
                        rows.append((order, row))
        return page(rows, limit, cursor)

    def sessions(self, tenant: str, limit: int, cursor: str | None,
                 filters: SessionFilters) -> tuple[list[SessionRow], str | None]:
        with self._lock:
            rows = [(_order(kept, filters), SessionRow(kept.session_id, kept.agent_id, kept.status, kept.created_at,
                                                       kept.owner, top_level=not kept.sub_agent,
                                                       attention=kept.attention if filters.attention else None))
                    for kept in self._sessions.values() if kept.tenant == tenant and listed_session(filters, kept)]
        return page(rows, limit, cursor)

    # --- agents and keys ---------------------------------------------------------------

    def put_agent(self, tenant: str, agent_id: str, config: JsonObject) -> None:
        with self._lock:
            self._agents[(tenant, agent_id)] = as_text(config)

    def get_agent(self, tenant: str, agent_id: str) -> JsonObject | None:
        with self._lock:
            text = self._agents.get((tenant, agent_id))
        return json.loads(text) if text is not None else None

    def put_api_key(self, key_hash: str, tenant: str, subject: str, origin: str,
                    groups: list[str] | None = None) -> None:
        with self._lock:
            self._keys[key_hash] = ApiKey(tenant, subject, origin, tuple(groups or ()))

    def revoke_api_key(self, key_hash: str) -> bool:
        with self._lock:
            if key_hash not in self._keys:
                return False
            self._keys[key_hash] = None
            return True

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        with self._lock:
            return self._keys.get(key_hash)

    # --- identity providers ----------------------------------------------------------------

    def identity_provider(self, tenant: str) -> IdentityProvider | None:
        with self._lock:
            return self._providers.get(tenant)

    def declare_identity_provider(self, tenant: str, provider: IdentityProvider) -> str | None:
        with self._lock:
            holder = self._holder(provider.issuer, provider.client_id)
            if holder is not None and holder[0] != tenant:
                return holder[0]
            self._providers[tenant] = provider
            return None

    def provider_for(self, issuer: str, client_id: str) -> tuple[str, IdentityProvider] | None:
        with self._lock:
            return self._holder(issuer, client_id)

    def _holder(self, issuer: str, client_id: str) -> tuple[str, IdentityProvider] | None:
        return next(((tenant, p) for tenant, p in self._providers.items()
                     if (p.issuer, p.client_id) == (issuer, client_id)), None)


INTERRUPT_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Interrupt) if f.default is not MISSING}
INTERRUPT_DEFAULTS["reminded"] = []

if TYPE_CHECKING:  # mypy proves the twin implements the three ports (nothing else passes it as one)
    _TWIN: SessionStore = MemoryStore()


def _order(kept: Session, filters: SessionFilters) -> str:
    """A listing's order key: when created, or (the attention listing) since when it needs a person."""
    if filters.attention and kept.attention is not None:
        return f"{kept.attention.get('since')}#{kept.session_id}"
    return kept.order()
