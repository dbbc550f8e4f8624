"""The half of a `ports.Parking` adapter that is its own records and the work queue: how a pause
is recorded, and the release's ordering (the wake first, then the pause's end). The Step Functions
adapter (`aws/parking.py`) and its in-memory twin (`holdpoint_local.memory.ports.MemoryParking`)
both build on it, so the twin releases as the adapter does; it is plain Python over the ports (an
import contract keeps it free of AWS), which is why the twin may import it.
"""

from __future__ import annotations

from typing import Any

from holdpoint.core.messages import Park
from holdpoint.core.state import Interrupt
from holdpoint.ports import Parked, ParkQueue, ParkRecord, ParkRecords


class RecordedParking:
    """The half of a `Parking` adapter that is its own records (`ParkRecords`) and the work queue,
    the same for the Step Functions adapter and its in-memory twin; a subclass starts and ends
    the pauses (`start`, `complete`) and names its records and queue."""

    def park_records(self) -> ParkRecords:
        raise NotImplementedError

    def wakes(self) -> ParkQueue:
        raise NotImplementedError

    def start(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> str:
        """Start (or find) the pause; its handle."""
        raise NotImplementedError

    def complete(self, token: str, output: dict[str, Any]) -> bool:
        """End the pause `token` holds; False when it is spent already (a no-op)."""
        raise NotImplementedError

    def joined(self, record: ParkRecord | None) -> None:
        """The resume found the raise's record (its trace, when the adapter traces): no-op here."""

    def status(self, tenant: str, session_id: str, interrupt: Interrupt) -> Parked:
        found = self.park_records().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        return Parked(started=found.handle is not None, waits=found.waits) if found else Parked()

    def park(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> None:
        """Start the raise's pause (`ParkRefused`: not now), then record it started."""
        handle = self.start(tenant, session_id, interrupt, timeout_seconds)
        self.park_records().started(tenant, session_id, interrupt.interrupt_id, interrupt.generation, handle)

    def wait(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int) -> None:
        self.park_records().waiting(tenant, session_id, interrupt.interrupt_id, interrupt.generation, attempt)

    def keep_token(self, message: Park) -> None:
        """Keep the park message's token on its raise's record (one conditional write)."""
        self.park_records().keep_token(message.tenant, message.session_id, message.interrupt_id,
                                       message.generation or 0, message.token)

    def end(self, message: Park) -> None:
        self.complete(message.token, {"interrupt_id": message.interrupt_id})

    def forget(self, message: Park) -> None:
        self.park_records().drop(message.tenant, message.session_id, message.interrupt_id, message.generation or 0,
                         message.token)

    def release(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """Wake a resolved interrupt's branch, then end its pause. The wake goes first, straight
        onto the work queue, and the engine starts while the end is in flight. A crash between the
        two leaves the pause waiting; its timeout then sends a wake the engine finds already
        applied, and a retried resume ends it sooner (docs/ARCHITECTURE.md, "Parking"). The token
        is read here, once, after the resolve's write and before the wake: a park message stored
        before it is seen, and one stored after it finds the interrupt resolved and ends the pause
        itself; the wake then carries the trace of the turn that parked (`joined`)."""
        found = self.park_records().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        self.joined(found)
        self.wakes().wake(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
        if found is not None and found.token:
            self.complete(found.token, {"interrupt_id": interrupt.interrupt_id})

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """The expiry the pause's timeout would send, for a raise whose pause never started."""
        self.wakes().expire(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
