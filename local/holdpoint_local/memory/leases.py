"""`ports.WaitLeases` in memory: the DynamoDB leases' counts (aws/leases.py) for one caller, one
tenant and the whole deployment, each a holder of lease id -> expiry under one lock. The room
each has is `core.quotas.check_room`, as on the table; a lease nobody gives back expires
`LEASE_SECS` after it was taken, on the injected clock."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable

from holdpoint.core import quotas
from holdpoint.core.quotas import LEASE_SECS
from holdpoint.ports.live import HeldLeases

Holder = tuple[str, ...]
TOTAL: Holder = ("total",)


class MemoryWaitLeases(HeldLeases):
    """The stream waits' leases; `limits` as the DynamoDB leases' (by default the environment's)."""

    def __init__(self, limits: quotas.Quotas | None = None, clock: Callable[[], float] = time.time) -> None:
        self.limits = limits or quotas.from_env(os.environ)
        self.clock = clock
        self.holders: dict[Holder, dict[str, float]] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def _limits(self, tenant: str, caller: str) -> list[tuple[Holder, str, int]]:
        """Each holder a lease goes into, with its limit's name and value, in the order they refuse."""
        return [(("caller", tenant, caller), "stream_waits_per_caller", self.limits.stream_waits_per_caller),
                (("tenant", tenant), "stream_waits_per_tenant", self.limits.stream_waits_per_tenant),
                (TOTAL, "stream_waits_total", self.limits.stream_waits_total)]

    def acquire(self, tenant: str, caller: str) -> str:
        """A new lease's id; `QuotaExceeded` (with the seconds until a lease frees) at a limit."""
        with self._lock:
            now = self.clock()
            held = self._limits(tenant, caller)
            for holder, limit, allowed in held:
                self.holders[holder] = quotas.live_leases(self.holders.get(holder, {}), now)
                quotas.check_room(limit, allowed, self.holders[holder], now)
            lease = f"memory.{next(self._ids)}"
            for holder, _, _ in held:
                self.holders[holder][lease] = now + LEASE_SECS
            return lease

    def release(self, tenant: str, caller: str, lease: str) -> None:
        """Give the lease back (a no-op for one already dropped as expired); an empty holder goes."""
        with self._lock:
            for holder, _, _ in self._limits(tenant, caller):
                leases = self.holders.get(holder, {})
                leases.pop(lease, None)
                if not leases:
                    self.holders.pop(holder, None)

