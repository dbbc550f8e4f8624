"""`ports.Deliveries` and `ports.PostedMessages` in memory: the DynamoDB records' conditions
(aws/deliveries.py) under one lock. A delivery is claimed once, each attempt begun once from the
attempt before, and only the running attempt's outcome recorded; a posted message is kept once.
Records are kept as JSON text, as the table keeps them, so a caller never shares an object with
them; the dead letters are the messages the notification DLQ would hold."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from holdpoint.core.jsontypes import JsonObject
from holdpoint.ports import DeadLetter, DeliveryRecord, DeliveryState, Posted

Key = tuple[str, str, str]


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass
class Delivery:
    """One (event, entry) delivery: where it stands, and the record it delivers (JSON text)."""

    status: str
    attempt: int
    body: str
    last_error: str = ""


@dataclass
class MemoryDeliveries:
    records: dict[Key, Delivery] = field(default_factory=dict)
    messages: dict[Key, Posted] = field(default_factory=dict)
    dead: list[JsonObject] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def claim(self, tenant: str, session_id: str, key: str, record: DeliveryRecord) -> bool:
        """Create the record at attempt 1; False when it already exists (the delivery has started)."""
        with self._lock:
            if (tenant, session_id, key) in self.records:
                return False
            self.records[(tenant, session_id, key)] = Delivery("sending", 1, _text(record))
            return True

    def begin(self, tenant: str, session_id: str, key: str, attempt: int) -> DeliveryRecord | None:
        """Move a failed attempt's record (`retrying`, or still `sending`) to `attempt`; its body."""
        with self._lock:
            found = self.records.get((tenant, session_id, key))
            if found is None or found.status not in ("retrying", "sending") or found.attempt != attempt - 1:
                return None
            found.status, found.attempt = "sending", attempt
            body: DeliveryRecord = json.loads(found.body)
            return body

    def finish(self, tenant: str, session_id: str, key: str, attempt: int, status: str,
               error: str | None = None) -> None:
        """Record how attempt `attempt` ended, if it is still the one running."""
        with self._lock:
            found = self.records.get((tenant, session_id, key))
            if found is not None and found.status == "sending" and found.attempt == attempt:
                found.status, found.last_error = status, error or ""

    def waiting(self, tenant: str, session_id: str, key: str) -> tuple[DeliveryRecord, int] | None:
        with self._lock:
            found = self.records.get((tenant, session_id, key))
            if found is None or found.status != "retrying":
                return None
            return json.loads(found.body), found.attempt

    def read(self, tenant: str, session_id: str, key: str) -> DeliveryState | None:
        with self._lock:
            found = self.records.get((tenant, session_id, key))
            return DeliveryState(found.status, found.attempt, found.last_error or None) if found else None

    def dead_letter(self, record: DeadLetter) -> None:
        """The message the DLQ would get: the delivery, its last error and attempt count."""
        with self._lock:
            self.dead.append(json.loads(_text({"kind": "notify.dead", **record})))

    def keep_posted(self, tenant: str, session_id: str, key: str, ref: Posted) -> None:
        """Keep a posted message's `{channel, ts}` under `key`, unless one is kept already."""
        with self._lock:
            self.messages.setdefault((tenant, session_id, key), ref)

    def posted(self, tenant: str, session_id: str, key: str) -> Posted | None:
        with self._lock:
            return self.messages.get((tenant, session_id, key))
