"""Parking: a raised interrupt's branch held by something that runs nothing while it waits (a
Step Functions task token on AWS), its own record per raise, and the release or expiry that
wakes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from holdpoint.core.messages import Park
from holdpoint.core.state import Interrupt


@dataclass(frozen=True)
class Parked:
    """Where one raise's pause stands, as its Parking keeps it: started, or refused `waits` times
    (a `ParkRetry` timer then tries again), or neither (the step loop starts it)."""

    started: bool = False
    waits: int = 0


class Parking(Protocol):
    """Durable pauses, one per raise of an interrupt, with the record of each kept by the parking
    itself (its handles never reach the session's state). Every method is idempotent: a retried
    or duplicated call changes nothing more. `park` raises `ParkRefused` when there is no capacity
    for one (`timeout_seconds`: what is left of the expiry, for a park started late); `wait`
    records the refusal; `hold` keeps what the started pause reported (`Park`), `end` ends that
    pause now and `forget` drops what `hold` kept of it; `release` wakes a resolved interrupt's
    branch and ends its pause; `expire` puts the expiry's wake on the queue for a raise with no pause."""

    def status(self, tenant: str, session_id: str, interrupt: Interrupt) -> Parked: ...

    def park(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> None: ...

    def wait(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int) -> None: ...

    def hold(self, message: Park) -> None: ...

    def end(self, message: Park) -> None: ...

    def forget(self, message: Park) -> None: ...

    def release(self, tenant: str, session_id: str, interrupt: Interrupt) -> None: ...

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None: ...


@dataclass(frozen=True)
class ParkRecord:
    """What a Parking adapter keeps for one raise (`ParkRecords`): the pause's `handle` once started
    (Step Functions: the execution's ARN), the refusals to start it, the `token` that ends it, and
    the `trace` of the hop that started it (opaque: the resume's hop joins it, holdpoint/tracing.py)."""

    handle: str | None = None
    waits: int = 0
    token: str | None = None
    trace: str | None = None


class ParkRecords(Protocol):
    """A Parking adapter's own records, one per (interrupt, generation), each field written once by
    a conditional write (a retry or a duplicate writes nothing): `waiting` only raises the count and
    only before the start, `drop` removes the record only while it holds `token` and no handle."""

    def read(self, tenant: str, session_id: str, interrupt_id: str, generation: int) -> ParkRecord | None: ...

    def started(self, tenant: str, session_id: str, interrupt_id: str, generation: int, handle: str) -> None: ...

    def waiting(self, tenant: str, session_id: str, interrupt_id: str, generation: int, attempt: int) -> None: ...

    def hold(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None: ...

    def drop(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None: ...


class ParkQueue(Protocol):
    """The work queue's wake and expiry messages, as a Parking adapter sends them."""

    def wake(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None: ...

    def expire(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None: ...


class KeptParking:
    """The half of a `Parking` adapter that is its own records (`ParkRecords`) and the work queue,
    the same for the Step Functions adapter and its in-memory twin; a subclass starts and ends
    the pauses (`start`, `complete`) and names its records and queue."""

    def kept(self) -> ParkRecords:
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
        found = self.kept().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        return Parked(started=found.handle is not None, waits=found.waits) if found else Parked()

    def park(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> None:
        """Start the raise's pause (`ParkRefused`: not now), then record it started."""
        handle = self.start(tenant, session_id, interrupt, timeout_seconds)
        self.kept().started(tenant, session_id, interrupt.interrupt_id, interrupt.generation, handle)

    def wait(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int) -> None:
        self.kept().waiting(tenant, session_id, interrupt.interrupt_id, interrupt.generation, attempt)

    def hold(self, message: Park) -> None:
        """Keep the park message's token on its raise's record (one conditional write)."""
        self.kept().hold(message.tenant, message.session_id, message.interrupt_id, message.generation or 0,
                         message.hold)

    def end(self, message: Park) -> None:
        self.complete(message.hold, {"interrupt_id": message.interrupt_id})

    def forget(self, message: Park) -> None:
        self.kept().drop(message.tenant, message.session_id, message.interrupt_id, message.generation or 0,
                         message.hold)

    def release(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """Wake a resolved interrupt's branch, then end its pause. The wake goes first, straight
        onto the work queue, and the engine starts while the end is in flight. A crash between the
        two leaves the pause waiting; its timeout then sends a wake the engine finds already
        applied, and a retried resume ends it sooner (docs/ARCHITECTURE.md, "Parking"). The token
        is read here, once, after the resolve's write and before the wake: a park message stored
        before it is seen, and one stored after it finds the interrupt resolved and ends the pause
        itself; the wake then carries the trace of the turn that parked (`joined`)."""
        found = self.kept().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        self.joined(found)
        self.wakes().wake(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
        if found is not None and found.token:
            self.complete(found.token, {"interrupt_id": interrupt.interrupt_id})

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """The expiry the pause's timeout would send, for a raise whose pause never started."""
        self.wakes().expire(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
