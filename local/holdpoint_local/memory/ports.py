"""The engine's other ports in memory: the work queue, the parking and the timers keep what they
were asked to do (a test plays it), with the AWS adapters' idempotence: one kick per session
version, one wake per interrupt generation, one pause per raise (its record in memory/parking.py),
one timer per key, and a task token spent once."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from holdpoint.aws.recorded_parking import RecordedParking
from holdpoint.core.messages import Kick, Wake, WorkMessage
from holdpoint.core.state import Interrupt
from holdpoint_local.memory.parking import MemoryParkRecords


@dataclass
class MemoryQueue:
    """`ports.WorkQueue`: the messages sent, each deduplicated as the FIFO queue does."""

    sent: list[WorkMessage] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _send(self, dedup: str, message: WorkMessage) -> None:
        with self._lock:
            if dedup not in self._seen:
                self._seen.add(dedup)
                self.sent.append(message)

    def kick(self, tenant: str, session_id: str, version: int) -> None:
        self._send(f"kick/{tenant}/{session_id}/{version}", Kick(tenant, session_id))

    def wake(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None:
        self._send(f"{dedup_key}-wake", Wake(tenant, session_id, interrupt_id, "resumed", generation))

    def expire(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None:
        self._send(f"{dedup_key}-expire", Wake(tenant, session_id, interrupt_id, "expired", generation))


@dataclass
class MemoryParking(RecordedParking):
    """`ports.Parking`: one pause per interrupt generation (`dedup_key`), its record in `records`
    (`MemoryParkRecords`, the DynamoDB records' twin); `release` wakes the branch on `queue` and
    spends the task token; a token is spent once (`complete` False after)."""

    queue: MemoryQueue = field(default_factory=MemoryQueue)
    records: MemoryParkRecords = field(default_factory=MemoryParkRecords)
    started: dict[str, dict[str, Any]] = field(default_factory=dict)
    spent: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def park_records(self) -> MemoryParkRecords:
        return self.records

    def wakes(self) -> MemoryQueue:
        return self.queue

    def start(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> str:
        with self._lock:
            self.started.setdefault(interrupt.dedup_key, {"tenant": tenant, "session_id": session_id,
                                                          "interrupt_id": interrupt.interrupt_id,
                                                          "generation": interrupt.generation})
        return f"memory:park:{interrupt.dedup_key}"

    def complete(self, token: str, output: dict[str, Any]) -> bool:
        with self._lock:
            if token in self.spent:
                return False
            self.spent.add(token)
            return True


@dataclass
class MemoryTimers:
    """`ports.Timers`: the timers asked for, one per (tenant, session, key)."""

    scheduled: dict[tuple[str, str, str], tuple[float, WorkMessage]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def schedule(self, seconds: float, message: WorkMessage, key: str) -> None:
        with self._lock:
            self.scheduled.setdefault((message.tenant, message.session_id, key), (seconds, message))
