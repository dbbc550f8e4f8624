"""Telling people and systems: notification channels, their delivery records, posted messages,
A2A push configs, the event bus and sealed action payloads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NotRequired, Protocol, TypedDict

from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.push import PushRecord
from holdpoint.core.retry import PolicyFields
from holdpoint.core.state import Interrupt


class Sealer(Protocol):
    """Tamper-evident tokens under the deployment's key. A payload is its purpose's own claims (a
    link's, a cursor's), and only that purpose reads it back, checking each field it takes."""

    def seal(self, purpose: str, payload: JsonObject) -> str: ...

    def unseal(self, purpose: str, token: str) -> JsonObject | None: ...


class Mailer(Protocol):
    """Sends one email from the deployment's verified identity (`aws.mail`: SES v2 `SendEmail`).
    A refusal of the message itself raises `DeliveryRefused`; one about load, `Throttled` or
    `Unavailable`."""

    def send(self, sender: str, to: list[str], subject: str, text: str, html: str) -> str: ...


class EventPublisher(Protocol):
    """The lifecycle event bus (EventBridge): raises when the event was not accepted."""

    def publish(self, detail_type: str, detail: JsonObject) -> None: ...


class NotifyChannel(Protocol):
    """One kind of `notify` entry (a webhook, Slack): hand one notification (`core.notify`'s, as
    published) to one declared entry (as its delivery record keeps it, re-checked by the channel),
    with the one-click links minted for it; raise `DeliveryFailed` to have it retried.

    `prepare` runs once, in the notifier, as the delivery is claimed, and its answer is kept in the
    delivery record and handed to every attempt (`prepared`): what an attempt needs that only the
    notifier may make, such as values sealed under the deployment's key. A retry runs in the engine,
    whose role may not read that key."""

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject: ...

    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class DeliveryState:
    """Where one delivery stands (`Deliveries.read`): `sending`, `retrying`, `delivered` or `dead`,
    at attempt `attempt`, with the last failed attempt's error."""

    status: str
    attempt: int
    last_error: str | None = None


class DeliveryRecord(TypedDict):
    """One delivery as its record keeps it: the notification (`event`) for one entry, through
    `channel`, retried under `policy`."""

    key: str
    tenant: str
    session_id: str
    channel: str
    entry: JsonObject
    event: JsonObject
    policy: PolicyFields
    prepared: NotRequired[JsonObject]  # the channel's `prepare`, when it made anything


class DeadLetter(DeliveryRecord):
    """A delivery out of attempts, as the dead-letter queue gets it."""

    attempts: int
    error: str


PushStarts = Callable[[str, str, JsonObject], list[DeliveryRecord]]
"""The delivery records an event-log entry starts beyond the `notify` entries: a bridge's own (the
A2A bridge's push configs, the runs bridge's answers), which the assembly hands the notifier."""


class Deliveries(Protocol):
    """One record per (event, entry), every step of it a conditional write: a delivery starts once
    and each retry runs once, however often the stream or the timer repeats itself."""

    def claim(self, tenant: str, session_id: str, key: str, record: DeliveryRecord) -> bool: ...

    def begin(self, tenant: str, session_id: str, key: str, attempt: int) -> DeliveryRecord | None: ...

    def finish(self, tenant: str, session_id: str, key: str, attempt: int, status: str,
               error: str | None = None) -> None: ...

    def waiting(self, tenant: str, session_id: str, key: str) -> tuple[DeliveryRecord, int] | None:
        """The record and its failed attempt when it waits for its retry (`retrying`), else None."""
        ...

    def read(self, tenant: str, session_id: str, key: str) -> DeliveryState | None: ...

    def dead_letter(self, record: DeadLetter) -> None: ...


@dataclass(frozen=True, slots=True)
class Posted:
    """A message a chat channel posted: Slack's channel id and the message's `ts`."""

    channel: str
    ts: str


class PostedMessages(Protocol):
    """Where a chat channel keeps the message it posted for an interrupt (Slack's `{channel, ts}`),
    so the message can be updated once the interrupt closes (S1). The first message kept wins."""

    def keep_posted(self, tenant: str, session_id: str, key: str, ref: Posted) -> None: ...

    def posted(self, tenant: str, session_id: str, key: str) -> Posted | None: ...


class PushConfigs(Protocol):
    """A2A push notification configs (PROTOCOL.md §8), one record per (task, config id) in the
    task's session (`core.push.PushRecord`). Setting the same config again is a no-op, a changed
    one replaces it; deleting a missing one is a no-op."""

    def put(self, tenant: str, session_id: str, turn_id: str, config: PushRecord, limit: int) -> bool:
        """Keep the config; False (nothing written) when it is a new id and the task holds `limit`
        already. Atomic with concurrent puts and deletes: the task never holds more than `limit`."""
        ...

    def get(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> PushRecord | None: ...

    def list(self, tenant: str, session_id: str, turn_id: str | None = None) -> list[PushRecord]:
        """A task's configs, oldest id first (every task's in the session when `turn_id` is None),
        each with its `turn_id`."""
        ...

    def delete(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> None: ...
