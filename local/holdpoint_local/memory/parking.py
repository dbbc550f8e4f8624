"""`ports.ParkRecords` in memory: the DynamoDB records' conditions (aws/ddb/parking.py), one record
per (tenant, session, interrupt, generation), each field set once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from holdpoint.ports import ParkRecord

Key = tuple[str, str, str, int]


@dataclass
class MemoryParkRecords:
    kept: dict[Key, ParkRecord] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, tenant: str, session_id: str, interrupt_id: str, generation: int) -> ParkRecord | None:
        with self._lock:
            return self.kept.get((tenant, session_id, interrupt_id, generation))

    def _write(self, at: Key, change: Callable[[ParkRecord], ParkRecord | None]) -> None:
        """One conditional write: `change` gives the record to keep, or None when its condition fails."""
        with self._lock:
            changed = change(self.kept.get(at, ParkRecord()))
            if changed is not None:
                self.kept[at] = changed

    def started(self, tenant: str, session_id: str, interrupt_id: str, generation: int, handle: str) -> None:
        self._write((tenant, session_id, interrupt_id, generation),
                    lambda now: replace(now, handle=handle) if now.handle is None else None)

    def waiting(self, tenant: str, session_id: str, interrupt_id: str, generation: int, attempt: int) -> None:
        self._write((tenant, session_id, interrupt_id, generation),
                    lambda now: replace(now, waits=attempt) if now.handle is None and now.waits < attempt else None)

    def keep_token(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None:
        self._write((tenant, session_id, interrupt_id, generation),
                    lambda now: replace(now, token=token) if now.token is None else None)

    def drop(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None:
        with self._lock:
            at = (tenant, session_id, interrupt_id, generation)
            now = self.kept.get(at)
            if now is not None and now.token == token and now.handle is None:
                del self.kept[at]
