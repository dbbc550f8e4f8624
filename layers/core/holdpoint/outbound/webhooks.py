"""The webhook notify channel: POST the notification as JSON, signed like worker requests
(PROTOCOL.md §2.7), to a URL held to the worker URL rules (`netguard`, re-checked at call time).

The receiver dedupes on the `X-Holdpoint-Delivery` header (the same for every attempt of one
delivery) or on the body's `event_id`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from holdpoint.outbound.workers import post_signed
from holdpoint.ports import DeliveryFailed, WorkerUnavailable

DELIVERY_HEADER = "X-Holdpoint-Delivery"
TIMEOUT_SECS = 10.0
"""A webhook answers quickly or is retried: a retry runs on the session's work queue group."""


def delivery_id(event_id: str, url: str) -> str:
    """The same for every attempt of one event to one URL."""
    return "dlv_" + hashlib.sha256(f"{event_id}|{url}".encode()).hexdigest()[:24]


class WebhookChannel:
    """`NotifyChannel` for `{url, secret?, events?, approver?}` entries; the secret reference is
    resolved with the event's tenant (the tenant's own secrets only)."""

    def deliver(self, event: dict[str, Any], entry: dict[str, Any], links: dict[str, str]) -> None:
        """A worker may replace the config in force, so the entry is re-checked here, not trusted."""
        if not isinstance(entry.get("url"), str) or not isinstance(entry.get("secret") or "", str):
            raise DeliveryFailed("a notify webhook needs a url string and, optionally, a secret reference string")
        body = {**event, "links": links} if event.get("type") == "interrupt.raised" else event
        delivery = delivery_id(str(event.get("event_id")), str(entry.get("url")))
        try:
            post_signed(entry["url"], body, entry.get("secret"), event.get("tenant"), "notify",
                        TIMEOUT_SECS, {DELIVERY_HEADER: delivery})
        except WorkerUnavailable as exc:
            raise DeliveryFailed(str(exc)) from exc
