"""`ports.Connections` in memory: the DynamoDB connections' rules (aws/connections.py) under one
lock. A connection holds a slot among its caller's connections and one among each followed
session's followers; the slots are counted as the table counts its items (a new one written,
then the live ones counted, refused `core.quotas.past_limit`), a slot held already counts once,
and one past its `expires` (on the injected clock) is gone to every read."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from holdpoint.core import quotas
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.quotas import MAX_FOLLOWED

Part = tuple[str, str, str]
"""Where slots are counted: ("caller", tenant, caller) or ("session", tenant, session)."""


@dataclass
class Slot:
    expires: int
    fmt: str = "events"


@dataclass
class Connection:
    tenant: str
    caller: Part
    followed: set[tuple[str, str]] = field(default_factory=set)


class MemoryConnections:
    """The live connections; `limits` as the DynamoDB connections' (by default the environment's)."""

    def __init__(self, clock: Callable[[], float] = time.time, limits: quotas.Quotas | None = None) -> None:
        self.clock = clock
        self.limits = limits or quotas.from_env(os.environ)
        self.connections: dict[str, Connection] = {}
        self.slots: dict[Part, dict[str, Slot]] = {}
        self._lock = threading.Lock()

    def open(self, connection_id: str, tenant: str, expires: int, caller: str = "") -> None:
        """The connection and its slot among the caller's; `QuotaExceeded` at `live_connections_per_caller`."""
        part = ("caller", tenant, caller)
        with self._lock:
            self._take(part, connection_id, Slot(expires), "live_connections_per_caller",
                       self.limits.live_connections_per_caller)
            self.connections[connection_id] = Connection(tenant, part)

    def _take(self, part: Part, connection_id: str, slot: Slot, limit: str, allowed: int) -> bool:
        """Write the slot; True when it was not held before. Past the limit it goes again and
        `QuotaExceeded` is raised."""
        held = self.slots.setdefault(part, {})
        old, held[connection_id] = held.get(connection_id), slot
        if old is not None and old.expires > self.clock():
            return False
        refused = quotas.past_limit(limit, allowed, len(self._live(part)))
        if refused is not None:
            del held[connection_id]
            raise refused
        return True

    def _live(self, part: Part) -> dict[str, Slot]:
        now = self.clock()
        return {cid: slot for cid, slot in self.slots.get(part, {}).items() if slot.expires > now}

    def subscribe(self, tenant: str, session_id: str, connection_id: str, expires: int,
                  fmt: str = "events") -> bool:
        """Follow the session; False when the connection is not open for `tenant` or follows
        `MAX_FOLLOWED` sessions already; `QuotaExceeded` at `live_followers_per_session`."""
        member = (tenant, session_id)
        with self._lock:
            found = self.connections.get(connection_id)
            if found is None or found.tenant != tenant:
                return False
            if member not in found.followed and len(found.followed) >= MAX_FOLLOWED:
                return False
            found.followed.add(member)
            try:
                self._take(("session", tenant, session_id), connection_id, Slot(expires, fmt),
                           "live_followers_per_session", self.limits.live_followers_per_session)
            except QuotaExceeded:
                found.followed.discard(member)
                raise
            return True

    def following(self, tenant: str, session_id: str) -> list[str]:
        return list(self.followers(tenant, session_id))

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        with self._lock:
            return {cid: slot.fmt for cid, slot in self._live(("session", tenant, session_id)).items()}

    def drop(self, tenant: str, session_id: str, connection_id: str) -> None:
        with self._lock:
            self.slots.get(("session", tenant, session_id), {}).pop(connection_id, None)

    def disconnect(self, connection_id: str) -> None:
        """Drop the connection's slots: each session it followed, its caller's, then itself."""
        with self._lock:
            found = self.connections.pop(connection_id, None)
            if found is None:
                return
            for tenant, session_id in found.followed:
                self.slots.get(("session", tenant, session_id), {}).pop(connection_id, None)
            self.slots.get(found.caller, {}).pop(connection_id, None)
