"""The DynamoDB single-table store (docs/ARCHITECTURE.md): `ports.SessionStore` (the sessions,
the interrupts and the directory) on one table, every change one conditional write. Its parts
live in `holdpoint.aws.ddb`: the keys (`schema`), items to records (`codec`), conditions and
updates from named parts (`expr`), the client and its failures (`table`), the session reads
with or without the warm-load cache (`cache`, `warm`), the commit (`commit`), the interrupt
writes (`interrupts`) and the listings (`listings`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.cache import Cached, Head, Reads, StateCache, cache_from_env
from holdpoint.aws.ddb.codec import Codec, agent_digest
from holdpoint.aws.ddb.commit import Committer, quota_refusal
from holdpoint.aws.ddb.expr import Between, Exists, Expr, QueryArgs, Update, eq, s
from holdpoint.aws.ddb.interrupts import InterruptWrites
from holdpoint.aws.ddb.listings import Listings
from holdpoint.aws.ddb.providers import ProviderItems
from holdpoint.aws.ddb.schema import quota_pk, session_pk
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.ddb.warm import WarmReads
from holdpoint.aws.errors import ConditionFailed
from holdpoint.core import quotas
from holdpoint.core.identity import IdentityProvider
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Event, Interrupt, SessionState
from holdpoint.ports import (
    MAX_SEQ,
    AddAnswer,
    ApiKey,
    Conflict,
    InboxQuery,
    InboxRow,
    Resolve,
    ResolveOutcome,
    SessionFilters,
    SessionRow,
)

__all__ = ["Cached", "Conflict", "Head", "StateCache", "Store", "agent_digest", "quota_pk", "quota_refusal",
           "session_pk"]


def _nothing(state: SessionState) -> None:
    """No one to tell of a commit."""


class Store:
    def __init__(self, table: str | None = None, client: Any = None, s3: Any = None,
                 cache: StateCache | bool = True, limits: quotas.Quotas | None = None) -> None:
        """`cache`: a `StateCache` to keep loaded tails in, False for none, True for one sized
        by `HOLDPOINT_STATE_CACHE` (on by default: a warm container reads only what changed).
        `limits`: the quotas a commit enforces (by default the environment's, `HOLDPOINT_QUOTA_*`)."""
        self.table = table or os.environ["TABLE_NAME"]
        self.db = Table(self.table, client)
        self.codec = Codec(os.environ.get("PAYLOAD_BUCKET", ""), s3)
        self.committer = Committer(self.db, self.codec, Reads(self.db), limits or quotas.from_env(os.environ))
        self.cache = cache_from_env() if cache is True else cache if isinstance(cache, StateCache) else None
        self.interrupt_writes = InterruptWrites(self.db, self.codec)
        self.listings = Listings(self.db, self.codec)
        self.providers = ProviderItems(self.db)
        self.committed: Callable[[SessionState], None] = _nothing
        """Called after each successful commit (the live push, services/live.py)."""

    @property
    def client(self) -> Any:
        return self.db.client

    @client.setter
    def client(self, client: Any) -> None:
        self.db.client = client

    @property
    def cache(self) -> StateCache | None:
        return self._cache

    @cache.setter
    def cache(self, cache: StateCache | None) -> None:
        """The warm-load cache wraps the reads (a new container's store starts with an empty one)."""
        self._cache = cache
        self.reads = WarmReads(self.db, cache) if cache is not None else Reads(self.db)
        self.committer.reads = self.reads

    @property
    def limits(self) -> quotas.Quotas:
        return self.committer.limits

    # --- sessions --------------------------------------------------------------------

    def load(self, tenant: str, session_id: str, *, head_only: bool = False) -> SessionState | None:
        """The session's state items (events excluded). `head_only` reads just the header, the
        agent item and the interrupts (`H` .. `I$`), for steps that touch nothing else: a load
        that does not grow with the tree. Such a state has no nodes, calls or decisions, so only
        code that needs none of them may be given one."""
        pk = session_pk(tenant, session_id)
        items = self.reads.head(pk) if head_only else self.reads.state(pk)
        if not items or items[0]["SK"]["S"] != k.HEADER_SK:
            return None
        state = self.codec.state(items, head_only=head_only)
        state.quota_slots = quotas.slots(state)
        state.now = time.time()  # the time of the load; a service with its own clock overrides it
        return state

    def commit(self, state: SessionState) -> int:
        written = self.committer.commit(state)
        self.committed(state)
        return written

    def events(self, tenant: str, session_id: str, after_seq: int, limit: int) -> list[Event]:
        """The first `limit` events after `after_seq`. An event-log item holds one commit's events
        and is keyed by the last, so the items from `after_seq + 1` on are the ones holding any
        event after it (the first may hold some before it); each holds at least one, so reading
        `limit` items, fewer as events come in, is enough."""
        if after_seq >= MAX_SEQ:  # nothing after the last key: never a BETWEEN whose bounds are inverted
            return []
        after = max(after_seq, 0)
        key = eq("PK", s(session_pk(tenant, session_id))) & Between(
            "SK", s(k.event_sk(after + 1)), s(k.event_sk(MAX_SEQ)))
        request = Expr().into(QueryArgs(ConsistentRead=True), key_condition=key)
        out: list[Event] = []
        while len(out) < limit:
            page = self.db.query_page(Limit=limit - len(out), **request)
            for item in page.get("Items", []):
                out.extend(self.codec.event(e) for e in self.codec.logged(item) if after < int(e["seq"]) <= MAX_SEQ)
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return out[:limit]

    def session_exists(self, tenant: str, session_id: str, end_user: str | None = None) -> bool:
        item = self.db.get({"PK": s(session_pk(tenant, session_id)), "SK": s(k.HEADER_SK)})
        if not item:
            return False
        return end_user is None or self.codec.body(item).get("end_user") == end_user

    # --- interrupts --------------------------------------------------------------------

    def read_interrupt(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None:
        """The interrupt as it is now (one strongly consistent GetItem): the resume checks its
        status, owner, origin and response schema before it writes anything."""
        return self.interrupt_writes.read(tenant, session_id, interrupt_id)

    def resolve_interrupt(self, change: Resolve) -> tuple[ResolveOutcome, Interrupt | None]:
        """R7: flip `open -> resolved` exactly once (`ports.Interrupts.resolve_interrupt`)."""
        writes = self.interrupt_writes
        return writes.resolve(writes.key_of(change.where), change)

    def record_approval(self, change: AddAnswer) -> tuple[ResolveOutcome, Interrupt | None]:
        """A2: append one answer that does not yet decide the interrupt (`ports.Interrupts`)."""
        writes = self.interrupt_writes
        return writes.answer(writes.key_of(change.where), Update(), change.checked, approval=change.approval,
                             done="recorded", edit=change.edit)

    def inbox(self, tenant: str, limit: int, cursor: str | None, query: InboxQuery | None = None,
              keep: Callable[[InboxRow], bool] | None = None) -> tuple[list[InboxRow], str | None]:
        return self.listings.inbox(tenant, limit, cursor, query or InboxQuery(), keep)

    def sessions(self, tenant: str, limit: int, cursor: str | None,
                 filters: SessionFilters) -> tuple[list[SessionRow], str | None]:
        return self.listings.sessions(tenant, limit, cursor, filters)

    # --- identity providers ----------------------------------------------------------------

    def identity_provider(self, tenant: str) -> IdentityProvider | None:
        return self.providers.identity_provider(tenant)

    def declare_identity_provider(self, tenant: str, provider: IdentityProvider) -> str | None:
        return self.providers.declare_identity_provider(tenant, provider)

    def provider_for(self, issuer: str, client_id: str) -> tuple[str, IdentityProvider] | None:
        return self.providers.provider_for(issuer, client_id)

    # --- agents and keys ---------------------------------------------------------------

    def put_agent(self, tenant: str, agent_id: str, config: JsonObject) -> None:
        self.db.put({"PK": s(k.agent_pk(tenant, agent_id)), "SK": s("AGENT"), "body": s(json.dumps(config))})

    def get_agent(self, tenant: str, agent_id: str) -> JsonObject | None:
        item = self.db.get({"PK": s(k.agent_pk(tenant, agent_id)), "SK": s("AGENT")}, consistent=False)
        return json.loads(item["body"]["S"]) if item else None

    def put_api_key(self, key_hash: str, tenant: str, subject: str, origin: str,
                    groups: list[str] | None = None) -> None:
        item = {"PK": s(k.key_pk(key_hash)), "SK": s("KEY"), "tenant": s(tenant), "subject": s(subject),
                "origin": s(origin), "status": s("active")}
        if groups:
            item["groups"] = s(json.dumps(groups))  # A2: the approver groups the key's holder is in
        self.db.put(item)

    def revoke_api_key(self, key_hash: str) -> bool:
        expr = Expr().request(update=Update(sets={"status": s("revoked")}), condition=Exists("PK"))
        try:
            self.db.update({"PK": s(k.key_pk(key_hash)), "SK": s("KEY")}, **expr)
        except ConditionFailed:
            return False
        return True

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        item = self.db.get({"PK": s(k.key_pk(key_hash)), "SK": s("KEY")}, consistent=False)
        if not item or item.get("status", {}).get("S") != "active":
            return None
        groups = json.loads(item["groups"]["S"]) if "groups" in item else []
        return ApiKey(item["tenant"]["S"], item["subject"]["S"], item["origin"]["S"], tuple(groups))
