"""The notifier (docs/NOTIFICATIONS.md): interrupt lifecycle events, read from the table's stream
(the outbox the session's own transaction wrote), published on the event bus and delivered to
each `notify` entry of the agent config in force.

- The bus gets every lifecycle event; a failure raises, so the stream retries the record (and
  the mapping dead-letters it in the end). Entries carry a stable `event_id` to dedupe on.
- Each (event, entry) delivery is one record, claimed with a conditional write, so a redelivered
  stream record never starts it twice; a failed attempt is retried on a durable timer (the work
  queue brings it back as a `notify` message), each attempt begun by a conditional write, and the
  last failure is dead-lettered. A refused write between the steps never strands a failed
  delivery: the timer is set even when recording the failure was refused, and a redelivered
  record or message of a delivery waiting for its retry sets its timer again. A channel that
  refuses a delivery for good (`DeliveryRefused`: SES's `MessageRejected`) is dead-lettered at
  once, as a last failure is.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from holdpoint.core import claims, notify, retry
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.messages import NotifyRetry
from holdpoint.core.state import SessionState
from holdpoint.ports import (
    Clock,
    Deliveries,
    DeliveryFailed,
    DeliveryRecord,
    DeliveryRefused,
    EventPublisher,
    NotifyChannel,
    PushStarts,
    Sealer,
    Sessions,
    Throttled,
    Timers,
    Unavailable,
)
from holdpoint.services import links

if TYPE_CHECKING:
    from holdpoint.core.agent_config import EmailEntry, SlackEntry, WebhookEntry

log = logging.getLogger("holdpoint.notify")

ERROR_CHARS = 512


def _links(notification: JsonObject) -> dict[str, str]:
    """The one-click links `core.notify.notification` put in (none when it minted none)."""
    found = notification.get("links")
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}


class Notifier:
    def __init__(self, store: Sessions, publisher: EventPublisher, deliveries: Deliveries, timers: Timers,
                 sealer: Sealer, channels: dict[str, NotifyChannel], link_base: str = "",
                 clock: Clock = time.time, pushes: PushStarts | None = None) -> None:
        self.store = store
        self.publisher = publisher
        self.deliveries = deliveries
        self.timers = timers
        self.sealer = sealer
        self.channels = channels
        self.link_base = link_base
        self.clock = clock
        self.pushes = pushes

    def on_event(self, tenant: str, session_id: str, event: JsonObject) -> JsonObject | None:
        """One event-log entry from the stream: publish it and fan it out. Returns the published
        notification (None for an entry that is no lifecycle event, or of a session gone)."""
        for record in self.pushes(tenant, session_id, event) if self.pushes is not None else []:
            if self.deliveries.claim(tenant, session_id, record["key"], record):  # A2A push configs (§8)
                self._attempt(record, 1)
            else:
                self._rearm(tenant, session_id, record["key"])
        kind = notify.kind_of(event)
        if kind is None:
            return None
        state = self.store.load(tenant, session_id, head_only=True)
        if state is None:
            return None
        body = self._notification(state, event, None)
        if body is None:
            return None
        self.publisher.publish(kind, body)
        for index, entry in enumerate(state.header.config().notify or []):
            if notify.wants(entry, kind):
                self._start(state, event, entry, index)
        return body

    def _notification(self, state: SessionState, event: JsonObject, approver: str | None) -> JsonObject | None:
        h = state.header
        data = event.get("data") or {}
        if not isinstance(data, dict):  # an event-log entry's data is an object
            raise AttributeError(f"{type(data).__name__!r} object has no attribute 'get'")
        interrupt = state.interrupts.get(str(data.get("interrupt_id")))
        minted: dict[str, str] = {}
        if notify.kind_of(event) in notify.WAITING and interrupt is not None and interrupt.status == "open":
            who = links.declared_approver(approver) if approver else claims.principal_of(h)
            if who.partition(":")[2]:
                minted = links.mint(self.sealer, self.link_base, h.tenant, h.session_id, interrupt, who,
                                    self.clock())
        return notify.notification(h.tenant, h.session_id, h.agent_id, event, minted)

    def _start(self, state: SessionState, event: JsonObject, declared: WebhookEntry | SlackEntry | EmailEntry,
               index: int) -> None:
        """Claim the (event, entry) delivery once, with what its channel prepares here (`prepare`:
        only the notifier may seal), then make its first attempt."""
        channel = notify.channel_of(declared)
        if channel is None or channel not in self.channels:
            log.warning("no notify channel %s is installed; entry %d skipped", channel, index)
            return
        from holdpoint.core.agent_config import SlackEntry  # loaded with the config it reads

        body = self._notification(state, event, None if isinstance(declared, SlackEntry) else declared.approver)
        entry: dict[str, Any] = declared.wire()  # the delivery record keeps the entry as declared
        if body is None:
            return
        h = state.header
        key = f"{body['event_id']}#{index}"
        record: DeliveryRecord = {"key": key, "tenant": h.tenant, "session_id": h.session_id, "channel": channel,
                                  "entry": entry, "event": body, "policy": retry.policy(h.agent, "webhook").fields()}
        prepared = self.channels[channel].prepare(body, entry, state.interrupts.get(str(body.get("interrupt_id"))))
        if prepared:
            record["prepared"] = prepared
        if self.deliveries.claim(h.tenant, h.session_id, key, record):
            self._attempt(record, 1)
        else:
            self._rearm(h.tenant, h.session_id, key)

    def retry(self, message: NotifyRetry) -> None:
        """A `notify` work message (a durable timer fired): run that attempt, once."""
        record = self.deliveries.begin(message.tenant, message.session_id, message.key, message.attempt)
        if record is not None:
            self._attempt(record, message.attempt)
        else:
            self._rearm(message.tenant, message.session_id, message.key)

    def _rearm(self, tenant: str, session_id: str, key: str) -> None:
        """A redelivered stream record or timer message of a delivery already under way. If it
        waits for its next attempt, its timer may never have been set (Scheduler refused it after
        the failure was recorded, and the record or message came back for that): ask again (the
        timer is named, so a pending one stays the one)."""
        waiting = self.deliveries.waiting(tenant, session_id, key)
        if waiting is not None:
            record, attempt = waiting
            self._schedule(record, attempt)

    def _attempt(self, record: DeliveryRecord, attempt: int) -> None:
        tenant, session_id, key = record["tenant"], record["session_id"], record["key"]
        if attempt > retry.Policy(**record["policy"]).max_attempts:  # every attempt failed; the dead letter did not go
            self._bury(record, attempt, self._last_error(tenant, session_id, key))
            return
        channel = self.channels.get(record["channel"])
        try:
            if channel is None:
                raise DeliveryFailed(f"no notify channel {record['channel']} is installed")
            channel.deliver(record["event"], record["entry"], _links(record["event"]), record.get("prepared"))
        except DeliveryRefused as exc:  # refused for good: another attempt would be refused again
            self._bury(record, attempt, str(exc)[:ERROR_CHARS])
            return
        except DeliveryFailed as exc:
            self._failed(record, attempt, str(exc)[:ERROR_CHARS])
            return
        self.deliveries.finish(tenant, session_id, key, attempt, "delivered")

    def _failed(self, record: DeliveryRecord, attempt: int, error: str) -> None:
        """Retry after the policy's backoff on a durable timer, or dead-letter the last attempt."""
        tenant, session_id, key = record["tenant"], record["session_id"], record["key"]
        policy = retry.Policy(**record["policy"])
        if attempt >= policy.max_attempts:
            self._bury(record, attempt, error)
            return
        try:
            self.deliveries.finish(tenant, session_id, key, attempt, "retrying", error)
        except (Throttled, Unavailable) as exc:
            # The table refused to record the failure: the timer alone carries the retry (`begin`
            # also moves a record still `sending` at this attempt, which only a timer can ask for).
            log.warning("delivery %s: recording attempt %d's failure was refused (%s)", key, attempt, exc)
        self._schedule(record, attempt)

    def _bury(self, record: DeliveryRecord, attempt: int, error: str) -> None:
        """Put the delivery out of attempts on the dead-letter queue, then record it `dead`. A
        refused send is retried on the same durable timers, as one more attempt that delivers
        nothing and sends the dead letter again (with the last delivery's error)."""
        tenant, session_id, key = record["tenant"], record["session_id"], record["key"]
        attempts = min(attempt, retry.Policy(**record["policy"]).max_attempts)
        try:
            self.deliveries.dead_letter({**record, "attempts": attempts, "error": error})
        except (Throttled, Unavailable) as exc:
            log.warning("delivery %s: the dead-letter send was refused (%s); it is retried", key, exc)
            with contextlib.suppress(Throttled, Unavailable):  # as in `_failed`: the timer alone carries it
                self.deliveries.finish(tenant, session_id, key, attempt, "retrying", error)
            self._schedule(record, attempt)
            return
        self.deliveries.finish(tenant, session_id, key, attempt, "dead", error)

    def _last_error(self, tenant: str, session_id: str, key: str) -> str:
        """The last delivery's error, for the dead letter sent again; empty if AWS refuses the read
        (the letter still goes: losing it would be worse than losing its error text)."""
        try:
            found = self.deliveries.read(tenant, session_id, key)
            return (found.last_error or "") if found is not None else ""
        except (Throttled, Unavailable) as exc:
            log.warning("delivery %s: reading its last error was refused (%s)", key, exc)
            return ""

    def _schedule(self, record: DeliveryRecord, attempt: int) -> None:
        """The timer of the attempt after `attempt`, after the policy's backoff."""
        tenant, session_id, key = record["tenant"], record["session_id"], record["key"]
        self.timers.schedule(retry.Policy(**record["policy"]).backoff(attempt),
                             NotifyRetry(tenant, session_id, key, attempt + 1), f"notify/{key}/{attempt + 1}")
