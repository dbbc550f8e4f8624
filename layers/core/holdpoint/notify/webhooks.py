"""The webhook notify channel: POST the notification as JSON, signed like worker requests
(PROTOCOL.md §2.7), to a URL held to the worker URL rules (`netguard`, re-checked at call time).

The receiver dedupes on the `X-Holdpoint-Delivery` header (the same for every attempt of one
delivery) or on the body's `event_id`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Interrupt
from holdpoint.outbound.workers import post_signed
from holdpoint.ports import DeliveryFailed, WorkerUnavailable

DELIVERY_HEADER = "X-Holdpoint-Delivery"
TIMEOUT_SECS = 10.0
"""A webhook answers quickly or is retried: a retry runs on the session's work queue group."""


def delivery_id(event_id: str, url: str) -> str:
    """The same for every attempt of one event to one URL."""
    return "dlv_" + hashlib.sha256(f"{event_id}|{url}".encode()).hexdigest()[:24]


def _tenant(event: JsonObject) -> str | None:
    """The notification's tenant, whose secrets the entry's reference may name."""
    tenant = event.get("tenant")
    return tenant if isinstance(tenant, str) else None


class WebhookChannel:
    """`NotifyChannel` for `{url, secret?, events?, approver?}` entries; the secret reference is
    resolved with the event's tenant (the tenant's own secrets only)."""

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject:
        """Nothing: the links the notifier minted are in the notification already."""
        return {}

    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        """A worker may replace the config in force, so the entry is re-checked here, not trusted."""
        url, secret = entry.get("url"), entry.get("secret") or None  # an empty reference is none
        if not isinstance(url, str) or not (secret is None or isinstance(secret, str)):
            raise DeliveryFailed("a notify webhook needs a url string and, optionally, a secret reference string")
        body: JsonObject = {**event, "links": {**links}} if event.get("type") == "interrupt.raised" else event
        delivery = delivery_id(str(event.get("event_id")), url)
        try:
            post_signed(url, body, secret, _tenant(event), "notify", TIMEOUT_SECS, {DELIVERY_HEADER: delivery})
        except WorkerUnavailable as exc:
            raise DeliveryFailed(str(exc)) from exc


PushTarget = Callable[[JsonObject, JsonObject], tuple[str, JsonObject, dict[str, str]] | None]
"""(url, body, headers) of one A2A push attempt, read when it runs; None: nothing to send."""


class A2aPushChannel:
    """`NotifyChannel` for A2A push configs (PROTOCOL.md §8): the A2A task POSTed as a webhook,
    signed with the agent's `a2a.push_secret`, with the config's token and `Authorization` (sent,
    never logged: an error names the field and the status only)."""

    def __init__(self, target: PushTarget) -> None:
        self.target = target

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject:
        """Nothing: the task is read when the attempt runs."""
        return {}

    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        found = self.target(event, entry)
        if found is None:
            return
        url, body, headers = found
        delivery = delivery_id(str(event.get("event_id")), f"a2a#{entry.get('config_id')}")
        secret = entry.get("secret")
        try:
            post_signed(url, body, secret if isinstance(secret, str) else None, _tenant(event), "a2a.push",
                        TIMEOUT_SECS, {**headers, DELIVERY_HEADER: delivery})
        except WorkerUnavailable as exc:
            raise DeliveryFailed(str(exc)) from exc
