"""The in-memory store's records: each kept as JSON text with its revision, the session's kept
state and listing attributes, their sizes as DynamoDB would count them, opaque cursors, and the
conditions a resolve and a listing apply (`holdpoint_local.memory.store` keeps them under its lock)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Call, Decision, Interrupt, Record, Turn
from holdpoint.ports import InboxQuery, InboxRow, SessionFilters

ITEM_BYTES = 400_000  # DynamoDB's item limit
OFFLOAD_BYTES = 300_000  # bodies above this go to S3 by reference in the DynamoDB store: never too large
TRANSACTION_BYTES = 4_000_000
MAX_TRANSACT_ITEMS = 100
KINDS: dict[str, type] = {"Call": Call, "Decision": Decision, "Interrupt": Interrupt, "Turn": Turn}
OUTSIDE_BODY = ("resolution", "responder", "approvals", "edits")
"""An interrupt's fields the DynamoDB store keeps as top-level attributes (they count whole)."""


def as_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def record_of(cls: type, body: dict[str, Any]) -> Any:
    """A record from its stored JSON (an interrupt's typed parts through `Interrupt.from_item`)."""
    if cls is Interrupt:
        return Interrupt.from_item(body)
    names = {f.name for f in fields(cls)}
    return cls(**{key: v for key, v in body.items() if key in names})


def body_of(record: Record) -> JsonObject:
    """A record as stored JSON: the other half of `record_of`."""
    return record.to_item() if isinstance(record, Interrupt) else asdict(record)


def interrupt_of(data: dict[str, Any]) -> Interrupt:
    return Interrupt.from_item(data)


def item_bytes(body: str, outside: Iterable[Any] = ()) -> int:
    """The size of an item as the DynamoDB store writes it: a body too large for an item goes to
    S3 (a short reference stays), the attributes outside the body count in full."""
    size = len(body.encode()) if len(body.encode()) <= OFFLOAD_BYTES else 200
    return size + sum(len(as_text(v).encode()) for v in outside if v is not None)


def interrupt_bytes(data: dict[str, Any]) -> int:
    body = {key: v for key, v in data.items() if key not in OUTSIDE_BODY}
    return item_bytes(as_text(body), (data.get(key) for key in OUTSIDE_BODY))


@dataclass
class Snapshot:
    """What a load read: the header's version is the state's; each record's revision here."""

    revs: dict[tuple[str, str], int] = field(default_factory=dict)
    head_only: bool = False
    listed_status: str | None = None


@dataclass
class Kept:
    """One stored record: its revision and its JSON text."""

    rev: int
    text: str


@dataclass
class Session:
    tenant: str
    session_id: str
    version: int
    header: str  # the header without its agent and version
    agent: str
    status: str
    created_at: str
    agent_id: str
    owner: str | None
    end_user: str | None
    sub_agent: bool
    attention: JsonObject | None = None
    nodes: dict[str, str] = field(default_factory=dict)
    records: dict[tuple[str, str], Kept] = field(default_factory=dict)
    events: dict[int, str] = field(default_factory=dict)

    def order(self) -> str:
        return f"{self.created_at}#{self.session_id}"


def encode_cursor(key: str | None) -> str | None:
    return base64.urlsafe_b64encode(key.encode()).decode() if key else None


def decode_cursor(cursor: str | None) -> str | None:
    return base64.urlsafe_b64decode(cursor.encode()).decode() if cursor else None


def page(rows: list[tuple[str, Any]], limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
    """Rows (order key, row) newest first, after the cursor's key; a cursor when more are left."""
    after = decode_cursor(cursor)
    left = [(key, row) for key, row in sorted(rows, key=lambda r: r[0], reverse=True) if after is None or key < after]
    out = left[:limit]
    return [row for _, row in out], encode_cursor(out[-1][0]) if len(left) > limit else None


def listed(query: InboxQuery, row: InboxRow, order: str) -> bool:
    """Whether the inbox query lists the interrupt (the DynamoDB store's index and filters)."""
    interrupt = row.interrupt
    if query.status == "open" and interrupt.status != "open":
        return False
    if query.status in ("resolved", "expired") and interrupt.status != query.status:
        return False
    if query.created_before is not None and not order < query.created_before:
        return False
    if query.agent_id is not None and row.agent_id != query.agent_id:
        return False
    if query.reason is not None and interrupt.reason != query.reason:
        return False
    if query.expiring_by is not None:
        return interrupt.expires_at is not None and interrupt.expires_at <= query.expiring_by
    return True



def listed_session(filters: SessionFilters, kept: Session) -> bool:
    """Whether `GET /v1/sessions` lists the session (the DynamoDB store's `Sessions` index filters)."""
    wanted = ((filters.agent_id, kept.agent_id), (filters.status, kept.status),
              (filters.top_level, not kept.sub_agent), (filters.end_user, kept.end_user))
    if filters.attention and kept.attention is None:
        return False
    return all(value is None or value == have for value, have in wanted)
