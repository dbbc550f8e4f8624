"""Stream wait leases (docs/SECURITY.md, "Quotas"): how many long-polls one caller, one tenant and
the whole deployment hold at once, exact under races and unable to leak on a crash. The
deployment's count (`stream_waits_total`) keeps waiting from starving serving: each wait holds a
function instance, so all tenants' waits together stay below the instances the API may take.

Each holder is one item: in the tenant's quota partition (`T#{tenant}#QUOTA`), `W` for the tenant
and `W#{digest of the caller}` for a caller; for the deployment, one of `SHARDS` items
(`QUOTA#W#{shard}`, each its own partition, so no one item takes every wait's writes), each
admitting its share of the total. A lease id names its shard.

Each holder holds `l`, a map of lease id -> expiry (epoch seconds), and `v`, a version (a random
token, new on every write, so a version is never seen twice). Taking a lease reads the caller's and
the tenant's holders and one of the deployment's with room, drops the expired leases, and rewrites
the three in one transaction conditioned on the versions read, adding the lease only while each
live count is under its limit; a writer that loses the race reads again (a few times, then the
caller is told to retry). Giving it back removes it under a new version, so a writer holding an
older read cannot put it back, and deletes a holder left with no lease (conditioned on that
version), so idle callers leave nothing behind. A lease nobody gives back (the function crashed or
timed out) expires by itself `LEASE_SECS` after it was taken (`core.quotas`); the room each holder
has is `core.quotas.check_room`, as the in-memory twin (memory/leases.py) counts it.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import secrets
import time
from collections.abc import Callable
from typing import Any

from holdpoint.aws.ddb import schema
from holdpoint.aws.ddb.expr import AttributeValue, Item, TransactOp, Write
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import Cancelled, ConditionFailed
from holdpoint.core import quotas
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.quotas import LEASE_SECS
from holdpoint.ports.live import HeldLeases

ATTEMPTS = 5
SHARDS = 8
"""The deployment's count is spread over this many holders (fewer when the total is smaller)."""
KEEP_SECS = 3600  # an idle holder item is left to the table's TTL this long after its last lease


def _s(value: str) -> AttributeValue:
    return {"S": value}


def _n(value: float) -> AttributeValue:
    return {"N": str(value)}


class WaitLeases(HeldLeases):
    """The leases of the stream waits, on the single table."""

    def __init__(self, table: str | None = None, client: Any = None, limits: quotas.Quotas | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.table = table or os.environ["TABLE_NAME"]
        self.db = Table(self.table, client)
        self.client = self.db.client
        self.limits = limits or quotas.from_env(os.environ)
        self.clock = clock

    def keys(self, tenant: str, caller: str) -> list[tuple[Item, str, int]]:
        """The caller's and the tenant's holders, each with its limit's name and value."""
        pk = _s(schema.quota_pk(tenant))
        return [({"PK": pk, "SK": _s(schema.caller_waits_sk(caller))}, "stream_waits_per_caller",
                 self.limits.stream_waits_per_caller),
                ({"PK": pk, "SK": _s(schema.WAITS_SK)}, "stream_waits_per_tenant", self.limits.stream_waits_per_tenant)]

    def shards(self) -> list[tuple[Item, int]]:
        """The deployment's holders, each with its share of `stream_waits_total` (the shares add up to it)."""
        return [({"PK": _s(schema.waits_shard_pk(i)), "SK": _s(schema.WAITS_SK)}, share)
                for i, share in enumerate(quotas.shares(self.limits.stream_waits_total, SHARDS))]

    def _live(self, key: Item, now: float) -> tuple[Item, dict[str, float]]:
        """A holder as read, and its leases that have not expired."""
        got = self.db.get(key) or {}
        return got, quotas.live_leases({k: float(v["N"]) for k, v in (got.get("l") or {}).get("M", {}).items()}, now)

    def _room(self, now: float) -> tuple[int, Item, Item, dict[str, float]]:
        """A deployment holder with room (from a random one on): its shard, key, item and live leases."""
        shards = self.shards()
        start = random.randrange(len(shards))
        soonest = math.inf
        for step in range(len(shards)):
            shard = (start + step) % len(shards)
            key, allowed = shards[shard]
            got, live = self._live(key, now)
            if len(live) < allowed:
                return shard, key, got, live
            soonest = min(soonest, *live.values()) if live else soonest
        retry = 1 if soonest == math.inf else quotas.seconds_until(soonest, now)
        raise QuotaExceeded("stream_waits_total", self.limits.stream_waits_total, retry)

    def acquire(self, tenant: str, caller: str) -> str:
        """A new lease's id; `QuotaExceeded` (with the seconds until a lease frees) when a limit is
        reached, or when other writers kept winning the race for the holders."""
        for attempt in range(ATTEMPTS):
            now = self.clock()
            ops, token = [], secrets.token_hex(8)
            for key, limit, allowed in self.keys(tenant, caller):
                got, live = self._live(key, now)
                quotas.check_room(limit, allowed, live, now)
                ops.append((key, got, live))
            shard, key, got, live = self._room(now)
            lease = f"{shard}.{token}"
            ops.append((key, got, live))
            try:
                self.db.transact([self._put(key, {**live, lease: now + LEASE_SECS}, got) for key, got, live in ops])
            except Cancelled:  # another holder's write won: read again
                time.sleep(random.uniform(0, 0.02 * 2 ** attempt))
                continue
            return lease
        raise QuotaExceeded("stream_waits_per_tenant", self.limits.stream_waits_per_tenant, 1)

    def _put(self, key: Item, live: dict[str, float], got: Item) -> TransactOp:
        """Rewrite a holder with its live leases, conditioned on the version read."""
        item: Item = {**key, "l": {"M": {k: _n(v) for k, v in live.items()}}, "v": _s(secrets.token_hex(8)),
                      "ttl": _n(math.ceil(max(live.values())) + KEEP_SECS)}
        condition = "v = :v" if "v" in got else "attribute_not_exists(v)"
        put: Write = {"Item": item, "ConditionExpression": condition}
        if "v" in got:
            put["ExpressionAttributeValues"] = {":v": got["v"]}
        return {"Put": put}

    def release(self, tenant: str, caller: str, lease: str) -> None:
        """Give the lease back (a no-op for one already dropped as expired)."""
        shards = self.shards()
        shard = int(lease.split(".", 1)[0])
        held = [key for key, _, _ in self.keys(tenant, caller)] + ([shards[shard][0]] if shard < len(shards) else [])
        for key in held:
            version = _s(secrets.token_hex(8))
            try:
                out = self.db.update(key, UpdateExpression="REMOVE l.#id SET v = :v",
                                     ConditionExpression="attribute_exists(l.#id)",
                                     ExpressionAttributeNames={"#id": lease}, ExpressionAttributeValues={":v": version})
            except ConditionFailed:  # dropped already, as expired
                continue
            if not out.get("l", {}).get("M"):
                self._drop(key, version)

    def _drop(self, key: Item, version: AttributeValue) -> None:
        """Delete a holder with no lease left, unless someone wrote it since."""
        with contextlib.suppress(ConditionFailed):  # written since: it is someone's again
            self.db.delete(key, ConditionExpression="v = :v", ExpressionAttributeValues={":v": version})

