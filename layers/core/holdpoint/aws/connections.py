"""WebSocket connections on the single table (docs/PROTOCOL.md, "Live events").

- `L#{connection_id}` / `C`: the connection, written by `$connect`: its tenant and `s`, the set of
  sessions it follows (at most `MAX_FOLLOWED`, so the item stays small and a commit's fan-out bounded).
- `T#{tenant}#L#{session_id}` / `C#{connection_id}`: one item per (session, connection), found by
  the session with one Query of its own partition, so the tenant is in the key that finds it; its
  `f` is the subscription's format (`events` or `ag-ui`, docs/PROTOCOL.md "Live events").
- `T#{tenant}#LC#{digest of the caller}` / `C#{connection_id}`: one item per open connection of a
  caller, so `$connect` counts them (quota `live_connections_per_caller`).

Quotas (docs/SECURITY.md, "Quotas") count items, not a counter: a new item is written first, then
its partition's live items are counted (one strongly consistent Query); past the limit
(`core.quotas.past_limit`) the writer deletes its own item and is refused. Racing writers may all
see the excess and all back out, so the limit is never exceeded, and a slot is given back by
deleting its item (`drop`, `disconnect`) or by its `ttl` passing. Writing an item that is already
there (a re-subscribe) counts nothing. The in-memory twin is memory/connections.py.

Every item carries `ttl`, the connection's end (API Gateway closes a connection after 2 hours), so
a connection whose `$disconnect` never ran leaves nothing behind; reads skip items past their
`ttl`, which the table's TTL may keep for a while.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from holdpoint.aws.ddb.expr import AttributeValue, Item, QueryArgs
from holdpoint.aws.ddb.schema import (
    CONNECTION_SK,
    caller_connections_pk,
    connection_pk,
    following_pk,
    slot_connection,
    slot_sk,
)
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import ConditionFailed
from holdpoint.core import quotas
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.quotas import MAX_FOLLOWED

_SEP = "\x1f"


def _s(value: str) -> AttributeValue:
    return {"S": value}


def connection_key(connection_id: str) -> Item:
    return {"PK": _s(connection_pk(connection_id)), "SK": _s(CONNECTION_SK)}


def slot_key(pk: str, connection_id: str) -> Item:
    """One connection's item in a session's followers or a caller's connections."""
    return {"PK": _s(pk), "SK": _s(slot_sk(connection_id))}


class Connections:
    """`ports.Connections` on DynamoDB."""

    def __init__(self, table: str | None = None, client: Any = None, clock: Callable[[], float] = time.time,
                 limits: quotas.Quotas | None = None) -> None:
        self.table = table or os.environ["TABLE_NAME"]
        self.db = Table(self.table, client)
        self.client = self.db.client
        self.clock = clock
        self.limits = limits or quotas.from_env(os.environ)

    def open(self, connection_id: str, tenant: str, expires: int, caller: str = "") -> None:
        """The connection's own item and its slot among the caller's connections (a repeated
        `$connect` rewrites them with the same values); `QuotaExceeded` when the caller has
        `live_connections_per_caller` open already."""
        pk = caller_connections_pk(tenant, caller)
        self._take(pk, connection_id, expires, "live_connections_per_caller", self.limits.live_connections_per_caller)
        try:
            self.db.put({**connection_key(connection_id), "tenant": _s(tenant), "ttl": {"N": str(expires)},
                         "k": _s(pk)})
        except Exception:
            # The handshake is refused, so no `$disconnect` will come: give the slot back if AWS
            # lets us (else it counts until its `ttl`).
            with contextlib.suppress(Exception):
                self.db.delete(slot_key(pk, connection_id))
            raise

    def _take(self, pk: str, connection_id: str, expires: int, limit: str, allowed: int,
              extra: Item | None = None) -> bool:
        """Write the slot `pk` / `C#{connection_id}`; True when it was not held before. Past the
        limit the new slot is deleted again and `QuotaExceeded` raised (see the module's docstring)."""
        key = slot_key(pk, connection_id)
        old = self.db.put({**key, "ttl": {"N": str(expires)}, **(extra or {})}, ReturnValues="ALL_OLD")
        if old and float(old["ttl"]["N"]) > self.clock():
            return False
        refused = quotas.past_limit(limit, allowed, self._count(pk))
        if refused is not None:
            self.db.delete(key)
            raise refused
        return True

    def _count(self, pk: str) -> int:
        """The partition's items whose `ttl` has not passed (strongly consistent)."""
        kwargs: QueryArgs = {"KeyConditionExpression": "PK = :pk",
                             "FilterExpression": "#ttl > :now", "ExpressionAttributeNames": {"#ttl": "ttl"},
                             "ExpressionAttributeValues": {":pk": _s(pk), ":now": {"N": str(int(self.clock()))}},
                             "ConsistentRead": True, "Select": "COUNT"}
        count = 0
        while True:
            page = self.db.query_page(**kwargs)
            count += int(page.get("Count", 0))
            if "LastEvaluatedKey" not in page:
                return count
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def subscribe(self, tenant: str, session_id: str, connection_id: str, expires: int,
                  fmt: str = "events") -> bool:
        """Follow the session in format `fmt` until `expires`; False when the connection is not open
        for `tenant` or follows `MAX_FOLLOWED` sessions already (following one again sets its format
        and `expires`); `QuotaExceeded` when the session has `live_followers_per_session` already."""
        member = f"{tenant}{_SEP}{session_id}"
        try:
            self.db.update(
                connection_key(connection_id), UpdateExpression="ADD s :m",
                ConditionExpression="tenant = :t AND (attribute_not_exists(s) OR contains(s, :one) OR size(s) < :max)",
                ExpressionAttributeValues={":m": {"SS": [member]}, ":one": _s(member), ":t": _s(tenant),
                                           ":max": {"N": str(MAX_FOLLOWED)}})
        except ConditionFailed:  # not open for this tenant, or following as many as it may
            return False
        try:
            self._take(following_pk(tenant, session_id), connection_id, expires, "live_followers_per_session",
                       self.limits.live_followers_per_session, {"f": _s(fmt)})
        except QuotaExceeded:
            self.db.update(connection_key(connection_id), UpdateExpression="DELETE s :m",
                           ExpressionAttributeValues={":m": {"SS": [member]}})
            raise
        return True

    def following(self, tenant: str, session_id: str) -> list[str]:
        """The connections that follow the session now."""
        return list(self.followers(tenant, session_id))

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        """Each connection that follows the session now, with its format (one strongly consistent Query)."""
        now = self.clock()
        items = self.db.query_all(KeyConditionExpression="PK = :pk", ConsistentRead=True,
                                  ExpressionAttributeValues={":pk": _s(following_pk(tenant, session_id))})
        return {slot_connection(item["SK"]["S"]): item.get("f", {}).get("S", "events") for item in items
                if float(item["ttl"]["N"]) > now}

    def drop(self, tenant: str, session_id: str, connection_id: str) -> None:
        self.db.delete(slot_key(following_pk(tenant, session_id), connection_id))

    def disconnect(self, connection_id: str) -> None:
        """Delete the connection's items: each session it followed, then its own."""
        got = self.db.get(connection_key(connection_id)) or {}
        for member in (got.get("s") or {}).get("SS", []):
            tenant, _, session_id = member.partition(_SEP)
            self.drop(tenant, session_id, connection_id)
        if "k" in got:
            self.db.delete(slot_key(got["k"]["S"], connection_id))
        self.db.delete(connection_key(connection_id))
