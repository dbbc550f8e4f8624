"""Paged listings: a tenant's interrupts (A6, the Inbox and History indexes) and sessions (the
Sessions index). A cursor is an opaque string at the port: the keys of the last row returned."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.codec import Codec, listed_owner, session_row
from holdpoint.aws.ddb.expr import Compare, Cond, Exists, Expr, Item, QueryArgs, all_of, eq, s
from holdpoint.aws.ddb.table import Table
from holdpoint.ports import InboxQuery, InboxRow, SessionFilters, SessionRow

LIST_READS = 5  # Query pages one listing page may read when filters skip rows (a cursor resumes after)
MAX_INBOX_PAGES = 10  # a filtered inbox page reads at most this many index pages, then hands a cursor
SESSION_KEYS = ("GSI2PK", "GSI2SK", "PK", "SK")
ATTENTION_KEYS = ("GSI4PK", "GSI4SK", "PK", "SK")
INBOX_KEYS = ("PK", "SK", "GSI1PK", "GSI1SK")
HISTORY_KEYS = ("PK", "SK", "GSI3PK", "GSI3SK")

RowsOf = Callable[[list[Item]], list[tuple[Item, Any]]]


def encode_cursor(key: Item | None) -> str | None:
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str | None) -> Item | None:
    if not cursor:
        return None
    key: Item = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    return key


def status_changed(query: InboxQuery, row: InboxRow) -> bool:
    """An item read after its index entry whose status is no longer the one asked for (raised
    again since): left out rather than listed under the wrong status."""
    return query.status not in ("open", "all") and row.interrupt.status != query.status


class Listings:
    def __init__(self, table: Table, codec: Codec) -> None:
        self.table, self.codec = table, codec

    def pages(self, kwargs: QueryArgs, cursor: str | None, limit: int, reads: int,
              keys: tuple[str, ...], rows_of: RowsOf) -> tuple[list[Any], str | None]:
        """A filtered, paged index Query: pages from `cursor` until `limit` rows are kept (`rows_of`
        gives each item its row, or None to skip it) or `reads` pages are read. The cursor is the
        `keys` of the last row returned, so the next page starts right after it; None when nothing
        is left."""
        rows: list[Any] = []
        start = decode_cursor(cursor)
        for _ in range(reads):
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = self.table.query_page(**kwargs)
            start = page.get("LastEvaluatedKey")
            pairs = rows_of(page.get("Items", []))
            for i, (item, row) in enumerate(pairs):
                if row is None:
                    continue
                rows.append(row)
                if len(rows) == limit:
                    more = start is not None or i < len(pairs) - 1
                    return rows, encode_cursor({key: item[key] for key in keys} if more else None)
            if start is None:
                break
        return rows, encode_cursor(start)

    def inbox(self, tenant: str, limit: int, cursor: str | None, query: InboxQuery,
              keep: Callable[[InboxRow], bool] | None) -> tuple[list[InboxRow], str | None]:
        """A6: open interrupts from the Inbox index, the others from History (then their items, in
        one BatchGetItem); `older_than` is a key condition, the other filters a FilterExpression,
        `keep` the caller's own test."""
        history = query.status != "open"
        kwargs = self.inbox_query(tenant, query)
        kwargs["Limit"] = limit

        def rows_of(items: list[Item]) -> list[tuple[Item, InboxRow | None]]:
            if history:  # the History index holds keys and filter attributes: read the items
                items = self.whole(items)
            out = []
            for item in items:
                row = self.inbox_row(item)
                kept = not status_changed(query, row) and (keep is None or keep(row))
                out.append((item, row if kept else None))
            return out

        return self.pages(kwargs, cursor, limit, MAX_INBOX_PAGES, HISTORY_KEYS if history else INBOX_KEYS, rows_of)

    @staticmethod
    def inbox_query(tenant: str, query: InboxQuery) -> QueryArgs:
        """Open interrupts from the Inbox index; closed or all from History, filtered on `status`."""
        index, pk_name, sk_name, pk = "Inbox", "GSI1PK", "GSI1SK", k.inbox_pk(tenant)
        if query.status != "open":
            index, pk_name, sk_name, pk = "History", "GSI3PK", "GSI3SK", k.history_pk(tenant)
        key: Cond = eq(pk_name, s(pk))
        if query.created_before:
            key = key & Compare(sk_name, "<", s(query.created_before))
        status = query.status if query.status in ("resolved", "expired") else None
        filters: list[Cond] = [Compare(attr, op, s(value)) for attr, value, op in (
            ("agent_id", query.agent_id, "="), ("reason", query.reason, "="),
            ("expires_at", query.expiring_by, "<="), ("status", status, "=")) if value is not None]
        expr = Expr()
        return expr.into(QueryArgs(IndexName=index, ScanIndexForward=False),
                         key_condition=key, filter_=all_of(filters) if filters else None)

    def whole(self, entries: list[Item]) -> list[Item]:
        """The items behind index entries, in the entries' order (one gone since, TTL, is left out)."""
        keys = [{"PK": e["PK"], "SK": e["SK"]} for e in entries]
        found = {(i["PK"]["S"], i["SK"]["S"]): i for i in self.table.batch_get(keys, consistent=False)}
        return [found[key] for key in ((e["PK"]["S"], e["SK"]["S"]) for e in entries) if key in found]

    def inbox_row(self, item: Item) -> InboxRow:
        body = self.codec.interrupt_body(item)
        interrupt = self.codec.interrupt(item)
        return InboxRow(session_id=k.session_of(item["PK"]["S"]), agent_id=item.get("agent_id", {}).get("S"),
                        interrupt=interrupt, body=body)

    def sessions(self, tenant: str, limit: int, cursor: str | None,
                 filters: SessionFilters) -> tuple[list[SessionRow], str | None]:
        """The tenant's sessions, newest first (with `attention`, those that need a person, from the
        sparse Attention index, most recently stuck first): one Query page when nothing is filtered;
        with filters, pages of 100 until `limit` rows match or `LIST_READS` pages are read."""
        conditions: list[Cond] = [eq(attr, s(value)) for attr, value in (
            (k.LISTED_AGENT, filters.agent_id), (k.LISTED_STATUS, filters.status),
            (k.LISTED_OWNER, None if filters.end_user is None else listed_owner(filters.end_user, filters.end_user)))
            if value is not None]
        if filters.top_level is not None:
            conditions.append(Exists(k.SUB_AGENT, present=not filters.top_level))
        expr = Expr()
        index, pk, keys = ("Attention", eq("GSI4PK", s(k.attention_pk(tenant))), ATTENTION_KEYS) if filters.attention \
            else ("Sessions", eq("GSI2PK", s(k.sessions_pk(tenant))), SESSION_KEYS)
        base: QueryArgs = {"IndexName": index, "ScanIndexForward": False, "Limit": 100 if conditions else limit}
        kwargs = expr.into(base, key_condition=pk, filter_=all_of(conditions) if conditions else None)
        return self.pages(kwargs, cursor, limit, LIST_READS, keys,
                          lambda items: [(item, session_row(item)) for item in items])
