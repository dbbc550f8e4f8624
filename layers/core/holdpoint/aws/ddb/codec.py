"""Items to records and back: the header, the agent, nodes, calls, decisions, turns, interrupts
and events, with bodies too large for an item kept in S3 by reference.

What the store reads with a state but the core has no use for (each record's revision, the
agent item as read, whether only the head was read, the status the listing holds) goes into a
`Snapshot` the state carries opaquely; the commit reads it back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.expr import Item, n, s
from holdpoint.core import bound_action
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Call, Decision, Event, Header, Interrupt, Record, SessionState, Turn
from holdpoint.core.tree import Node, Tree
from holdpoint.ports import SessionRow


def _defaults(cls: type) -> dict[str, object]:
    out = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    out.update({f.name: f.default_factory() for f in fields(cls) if f.default_factory is not MISSING})
    return out


INTERRUPT_DEFAULTS = _defaults(Interrupt)
HEADER_DEFAULTS = _defaults(Header)
"""Interrupt and header bodies leave out the fields at these values (both are rewritten often and
read whole, and DynamoDB bills a write per started KB); loading fills them in again."""

INTERRUPT_TEXT_ATTRS = ("status", "resolved_at", "origin", "owner", "reason", "expires_at")
INTERRUPT_JSON_ATTRS = ("resolution", "responder")
"""An interrupt's fields the item also carries as top-level attributes (for the conditional
writes and the indexes): the body leaves out each one the item carries, so it is stored once."""


@dataclass
class Snapshot:
    """The store's own bookkeeping for one loaded state."""

    revs: dict[tuple[str, str], int] = field(default_factory=dict)
    agent_item: JsonObject | None = None  # the header's `agent_item` as loaded (the same object)
    head_only: bool = False
    listed_status: str | None = None
    done_through: int = 0  # the header's `done_through` as loaded
    pending: dict[str, JsonObject] = field(default_factory=dict)  # decisions stored pending, as stored


def answered(stored: JsonObject) -> JsonObject:
    """A pending decision once the worker's own response has answered it (`engine.apply_response`
    with `via="worker"`). The commit that answers a decision stored pending does not rewrite it
    when every decision of its order or lower is then answered: the header's `done_through` says
    so, and loading reads each decision stored pending at or below it as this. A transaction bills
    2 write units for every decision item, and most decisions are answered by the next step."""
    attempts = stored.get("attempts", 0)
    return {**stored, "status": "delivered", "via": "worker",
            "attempts": (attempts if isinstance(attempts, int) else 0) + 1}


def done_through(state: SessionState) -> int:
    """The highest order at or below which no decision is pending. Decisions leave `pending` for
    good and a new one takes the next order, so it never goes down; a head-only state has no
    decisions to say, and keeps what it loaded."""
    snap = snapshot_of(state)
    if snap.head_only:
        return snap.done_through
    pending = [d.order for d in state.decisions.values() if d.status == "pending"]
    return max(snap.done_through, min(pending) - 1 if pending else state.header.counter)


def answered_in_place(state: SessionState, decision: Decision, done: int) -> bool:
    """The commit may leave this decision's item as it is: stored pending, at or below `done`,
    and changed only by being answered (so loading reads it back exactly)."""
    stored = snapshot_of(state).pending.get(decision.id)
    return stored is not None and decision.order <= done and asdict(decision) == answered(stored)


def snapshot_of(state: SessionState) -> Snapshot:
    """The state's snapshot; a state the store did not load (a new session) gets an empty one."""
    snap = state.snapshot
    if not isinstance(snap, Snapshot):
        snap = Snapshot()
        state.snapshot = snap
    return snap


def agent_digest(item: JsonObject | None) -> str:
    """The version of the config in force (A3's `agent_version`), from the item as stored."""
    return bound_action.digest(item)


def agent_changed(state: SessionState) -> bool:
    """Whether the commit writes the agent item: a new session's, or a config in force that moved
    since the load. The item loaded, untouched, is unchanged without being hashed; any other (a
    config a worker's answer put in force) by its digest, so an echo of the same config is no write."""
    item, snap = state.header.agent_item, snapshot_of(state)
    if not state.exists:
        return True
    return item is not snap.agent_item and agent_digest(item) != agent_digest(snap.agent_item)


def record_key(record: Record) -> tuple[str, str]:
    """The key a state's `dirty` map and a snapshot's revisions share."""
    return type(record).__name__, record.interrupt_id if isinstance(record, Interrupt) else record.id


def _load(cls: type, body: Mapping[str, object]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{key: v for key, v in body.items() if key in names})


def _rev(item: Item) -> int:
    return int(item.get(k.REV, {"N": "0"})["N"])


class Codec:
    """Encodes and decodes items; `s3` (a client, built on first use) holds offloaded bodies."""

    def __init__(self, bucket: str, s3: Any = None) -> None:
        self.bucket = bucket
        self._s3 = s3

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            from holdpoint.aws import clients

            self._s3 = clients.client("s3")
        return self._s3

    # --- bodies ---------------------------------------------------------------------------

    def body_attrs(self, pk: str, sk: str, body: Any) -> Item:
        """The item's `body`, or a `body_ref` to S3 when it would not fit DynamoDB's 400 KB item.
        The object is written first and named by its content, so a retried step rewrites the
        same object and a failed transaction leaves only an unreferenced object behind."""
        text = json.dumps(body, separators=(",", ":"))
        if len(text.encode()) <= k.OFFLOAD_BYTES or not self.bucket:
            return {"body": s(text)}
        digest = hashlib.sha256(text.encode()).hexdigest()
        key = f"{pk}/{sk}/{digest}.json"
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=text.encode(), ContentType="application/json")
        return {"body_ref": s(key)}

    def body(self, item: Item) -> Any:
        if "body_ref" in item:
            got = self.s3.get_object(Bucket=self.bucket, Key=item["body_ref"]["S"])
            return json.loads(got["Body"].read())
        return json.loads(item["body"]["S"])

    # --- decoding -------------------------------------------------------------------------

    def state(self, items: list[Item], *, head_only: bool) -> SessionState:
        """A session's state from its items (the header first), with its snapshot."""
        tenant, session_id = k.session_key(items[0]["PK"]["S"])
        header = _load(Header, {"tenant": tenant, "session_id": session_id, **self.body(items[0])})
        header.version = int(items[0][k.VERSION]["N"])
        snap = Snapshot(head_only=head_only, listed_status=items[0].get(k.LISTED_STATUS, {}).get("S"),
                        done_through=int(items[0].get(k.DONE_THROUGH, {"N": "0"})["N"]))
        state = SessionState(header=header, tree=Tree(head_id=header.head_id), snapshot=snap)
        for item in items[1:]:
            sk = item["SK"]["S"]
            if sk == k.AGENT_SK:
                header.agent_item = snap.agent_item = self.body(item)
            elif sk.startswith(k.NODE):
                body = self.body(item)
                state.tree.add(Node(id=body["id"], parent_id=body.get("parent_id"), message=body["message"],
                                    order=body.get("order", 0)))
            else:
                self._record(state, snap, sk, item)
        return state

    def _record(self, state: SessionState, snap: Snapshot, sk: str, item: Item) -> None:
        kind = k.KIND_OF_PREFIX.get(sk[:2])
        if kind is None:
            return
        if kind == "Interrupt":
            interrupt = self.interrupt(item)
            state.interrupts[interrupt.interrupt_id] = interrupt
            snap.revs[(kind, interrupt.interrupt_id)] = _rev(item)
            return
        body = self.body(item)
        if kind == "Call":
            state.calls[body["id"]] = _load(Call, body)
        elif kind == "Decision":
            if body.get("status") == "pending" and body["order"] <= snap.done_through:
                body = answered(body)
            decision: Decision = _load(Decision, body)
            if decision.status == "pending":
                snap.pending[decision.id] = asdict(decision)
            state.decisions[decision.id] = decision
        else:
            state.turns[body["id"]] = _load(Turn, body)
        record = {"id": body["id"]}
        snap.revs[(kind, record["id"])] = _rev(item)

    def interrupt_body(self, item: Item) -> JsonObject:
        """An interrupt item's whole record: its body, with the top-level attributes (what the
        conditional updates write, and what the body leaves out) on top."""
        body: JsonObject = {"interrupt_id": item["SK"]["S"][len(k.PREFIX[Interrupt]):], **self.body(item)}
        for attr in INTERRUPT_TEXT_ATTRS:
            if attr in item:
                body[attr] = item[attr]["S"]
        for attr in INTERRUPT_JSON_ATTRS:
            if attr in item:
                body[attr] = json.loads(item[attr]["S"])
        if "generation" in item:
            body["generation"] = int(item["generation"]["N"])
        if k.TTL in item:
            body["kept_until"] = int(item[k.TTL]["N"])
        for attr in ("approvals", "edits"):  # A2, A3: appended by the resume's update, one JSON text each
            if attr in item:
                body[attr] = [json.loads(a["S"]) for a in item[attr]["L"]]
        return body

    def interrupt(self, item: Item) -> Interrupt:
        return Interrupt.from_item(self.interrupt_body(item))

    @staticmethod
    def event(body: dict[str, Any]) -> Event:
        return Event(seq=body["seq"], type=body["type"], data=body["data"], at=body["at"])

    # --- encoding -------------------------------------------------------------------------

    def node_item(self, pk: str, node: Node) -> Item:
        body = {"id": node.id, "parent_id": node.parent_id, "message": node.message, "order": node.order}
        sk = f"{k.NODE}{node.id}"
        return {"PK": s(pk), "SK": s(sk), **self.body_attrs(pk, sk, body)}

    def events_item(self, pk: str, events: list[Event]) -> Item:
        """A commit's events as one item (a commit writes one item for its events, however many:
        DynamoDB bills a transaction 2 units for every item under 1 KB), keyed by the last seq."""
        sk = k.event_sk(events[-1].seq)
        return {"PK": s(pk), "SK": s(sk), "etype": s(k.log_type([e.type for e in events])),
                **self.body_attrs(pk, sk, [e.wire() for e in events])}

    def logged(self, item: Item) -> list[dict[str, Any]]:
        """The events of an event-log item, in seq order (an item of one event alone, its body
        the event itself, is read as a list of one)."""
        body = self.body(item)
        return body if isinstance(body, list) else [body]

    def agent_item(self, pk: str, agent: JsonObject | None) -> Item:
        return {"PK": s(pk), "SK": s(k.AGENT_SK), **self.body_attrs(pk, k.AGENT_SK, agent)}

    def header_item(self, pk: str, state: SessionState, listing: Item) -> Item:
        # The session's keys are the item's; the agent is in its own item (`agent_item`), written
        # only when it changes.
        omit = ("version", "agent_item", "_agent", "tenant", "session_id")
        body = {key: v for key, v in asdict(replace(state.header, agent_item=None)).items()
                if key not in omit and v != HEADER_DEFAULTS.get(key, ...)}
        return {"PK": s(pk), "SK": s(k.HEADER_SK), k.VERSION: n(state.header.version + 1),
                **self.body_attrs(pk, k.HEADER_SK, body), **listing}

    def record_item(self, pk: str, record: Record, rev: int, header: Header) -> Item:
        """A call, decision, turn or interrupt as the item written at revision `rev + 1`."""
        body = record.to_item() if isinstance(record, Interrupt) else asdict(record)
        body.pop("approvals", None)  # an interrupt's answers and edits live in their own attributes (A2, A3)
        body.pop("edits", None)
        sk = k.PREFIX[type(record)] + record_key(record)[1]
        attrs: Item = {}
        status = getattr(record, "status", None)
        if status:
            attrs["status"] = s(status)
        if isinstance(record, Interrupt):
            # Rewritten often and read whole: unset fields stay out, and so do the id (the key's)
            # and the fields the item carries on top (`interrupt_body` puts them back).
            attrs.update(interrupt_attrs(record, header))
            body = {key: v for key, v in body.items()
                    if key not in ("interrupt_id", *attrs) and v != INTERRUPT_DEFAULTS.get(key, ...)}
            if k.TTL in attrs:
                body.pop("kept_until", None)
        return {"PK": s(pk), "SK": s(sk), k.REV: n(rev + 1), **self.body_attrs(pk, sk, body), **attrs}


def interrupt_attrs(record: Interrupt, header: Header) -> Item:
    """An interrupt's top-level attributes: what the resume's conditional writes test and set,
    and the index attributes (A6)."""
    out: Item = {"origin": s(record.origin), "generation": n(record.generation)}
    if record.owner:
        out["owner"] = s(record.owner)
    if record.resolution is not None:
        out["resolution"] = s(json.dumps(record.resolution))
    if record.responder is not None:
        out["responder"] = s(json.dumps(record.responder.to_item()))
    if record.resolved_at:
        out["resolved_at"] = s(record.resolved_at)
    if record.approvals:
        out["approvals"] = {"L": [s(json.dumps(a.to_item())) for a in record.approvals]}
    if record.edits:
        out["edits"] = {"L": [s(json.dumps(e.to_item())) for e in record.edits]}
    out.update(index_attrs(record, header.tenant, header.session_id, header.agent_id))
    return out


def index_attrs(record: Interrupt, tenant: str, session_id: str, agent_id: str | None) -> Item:
    """A6: the Inbox index while open, the History index always (both newest first), the
    attributes the inbox filters on, and the TTL of a closed interrupt the agent keeps a while."""
    order = s(f"{record.created_at}#{session_id}#{record.interrupt_id}")
    out: Item = {"GSI3PK": s(k.history_pk(tenant)), "GSI3SK": order, "reason": s(record.reason)}
    if record.status == "open":
        out.update({"GSI1PK": s(k.inbox_pk(tenant)), "GSI1SK": order})
    if agent_id:
        out["agent_id"] = s(agent_id)
    if record.expires_at:
        out["expires_at"] = s(record.expires_at)
    if record.kept_until is not None and record.status != "open":
        out[k.TTL] = n(record.kept_until)
    return out


def listing_attrs(state: SessionState, status: str) -> Item:
    """The header's `Sessions` GSI keys (`GSI2SK` is `{created_at}#{session}`: newest first) and the
    row a listing shows. DynamoDB writes the index only when one of these changes (the keys never
    do), so a commit pays an index write only when the session's status changes."""
    h = state.header
    out: Item = {"GSI2PK": s(k.sessions_pk(h.tenant)), "GSI2SK": s(f"{h.created_at}#{h.session_id}"),
                 k.LISTED_AGENT: s(h.agent_id), k.LISTED_STATUS: s(status)}
    owner = (h.identity or {}).get("id")
    if owner:
        out[k.LISTED_OWNER] = s(listed_owner(str(owner), h.end_user))
    if h.ancestry:
        out[k.SUB_AGENT] = {"BOOL": True}
    if h.attention:  # the sparse Attention index: only while a delivery retries or failed
        out.update({"GSI4PK": s(k.attention_pk(h.tenant)), "GSI4SK": s(f"{h.attention['since']}#{h.session_id}"),
                    k.LISTED_ATTENTION: s(json.dumps(h.attention))})
    return out


def listed_owner(owner: str, end_user: str | None) -> str:
    """The listing's owner attribute: the session's subject, after `user:` when an end user
    started it and `key:` when an API key did, so an end user's filter never matches a key's."""
    return f"user:{owner}" if end_user is not None else f"key:{owner}"


def session_row(item: Item) -> SessionRow:
    """A listing row, from the attributes the `Sessions` GSI projects (the owner without its kind)."""
    owner = item.get(k.LISTED_OWNER, {}).get("S")
    attention = item.get(k.LISTED_ATTENTION, {}).get("S")
    return SessionRow(session_id=k.session_of(item["PK"]["S"]), agent_id=item.get(k.LISTED_AGENT, {}).get("S"),
                      status=item.get(k.LISTED_STATUS, {}).get("S"), created_at=item["GSI2SK"]["S"].split("#", 1)[0],
                      owner=owner.split(":", 1)[1] if owner else None, top_level=k.SUB_AGENT not in item,
                      attention=json.loads(attention) if attention else None)
