"""Live followers: WebSocket connections, the frames posted to them, and the leases of stream waits."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from holdpoint.core.jsontypes import JsonObject


class WaitLeases(Protocol):
    """Concurrent stream waits, per caller and per tenant (`aws/leases.py`): `held` raises
    `core.errors.QuotaExceeded` when a limit is reached, and gives the lease back however the block ends."""

    def held(self, tenant: str, caller: str) -> AbstractContextManager[None]: ...


class HeldLeases:
    """`WaitLeases.held` on an adapter's `acquire` and `release`, once for every adapter."""

    def acquire(self, tenant: str, caller: str) -> str:
        raise NotImplementedError

    def release(self, tenant: str, caller: str, lease: str) -> None:
        raise NotImplementedError

    @contextmanager
    def held(self, tenant: str, caller: str) -> Iterator[None]:
        """Hold a lease for the block; given back however it ends."""
        lease = self.acquire(tenant, caller)
        try:
            yield
        finally:
            self.release(tenant, caller, lease)


class Connections(Protocol):
    """WebSocket connections and the sessions each follows (`aws/connections.py`): one item per
    (session, connection), found by the session, gone with the connection's 2-hour lifetime."""

    def open(self, connection_id: str, tenant: str, expires: int, caller: str = "") -> None:
        """`QuotaExceeded` when `caller` holds its limit of open connections."""
        ...

    def subscribe(self, tenant: str, session_id: str, connection_id: str, expires: int,
                  fmt: str = "events") -> bool:
        """`QuotaExceeded` when the session has its limit of followers."""
        ...

    def following(self, tenant: str, session_id: str) -> list[str]: ...

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        """Connection id -> the subscription's format (`events` or `ag-ui`)."""
        ...

    def drop(self, tenant: str, session_id: str, connection_id: str) -> None: ...

    def disconnect(self, connection_id: str) -> None: ...


class Frames(Protocol):
    """API Gateway's `@connections` management API: `post` sends one live frame (services/live.py)
    as its JSON, and is False when the connection is gone (410)."""

    def post(self, connection_id: str, frame: JsonObject) -> bool: ...

    def close(self, connection_id: str) -> None:
        """DeleteConnection: API Gateway closes the socket (a gone one is no error)."""
        ...
