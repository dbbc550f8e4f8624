"""Parking: a raised interrupt's branch held by something that runs nothing while it waits (a
Step Functions task token on AWS), its own record per raise, and the release or expiry that
wakes it. What the adapters share of doing it (the release's ordering) is `aws/recorded_parking.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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
    records the refusal; `keep_token` keeps what the started pause reported (`Park`), `end` ends that
    pause now and `forget` drops what `keep_token` kept of it; `release` wakes a resolved interrupt's
    branch and ends its pause; `expire` puts the expiry's wake on the queue for a raise with no pause."""

    def status(self, tenant: str, session_id: str, interrupt: Interrupt) -> Parked: ...

    def park(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> None: ...

    def wait(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int) -> None: ...

    def keep_token(self, message: Park) -> None: ...

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

    def keep_token(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None: ...

    def drop(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None: ...


class ParkQueue(Protocol):
    """The work queue's wake and expiry messages, as a Parking adapter sends them."""

    def wake(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None: ...

    def expire(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None: ...
