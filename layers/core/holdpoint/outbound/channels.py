"""The notify channels installed, by the kind `core.notify.channel_of` names an entry: where a new
channel plugs in (it implements `ports.NotifyChannel`: `deliver(event, entry, links)`, raising
`DeliveryFailed` to be retried)."""

from __future__ import annotations

from holdpoint.ports import NotifyChannel


def installed() -> dict[str, NotifyChannel]:
    """Every channel the notifier delivers to; an entry of a kind not listed here is skipped."""
    from holdpoint.outbound.webhooks import WebhookChannel

    return {"notify.webhook": WebhookChannel()}
