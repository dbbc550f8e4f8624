"""The notify channels installed, by the kind `core.notify.channel_of` names an entry: where a new
channel plugs in (it implements `ports.NotifyChannel`: `deliver(event, entry, links)`, raising
`DeliveryFailed` to be retried)."""

from __future__ import annotations

from holdpoint.ports import Interrupts, NotifyChannel, PostedMessages


def installed(store: Interrupts | None = None, messages: PostedMessages | None = None) -> dict[str, NotifyChannel]:
    """Every channel the notifier delivers to; an entry of a kind not listed here is skipped.
    Slack reads the raised interrupt from `store` (a notification carries only a summary) and
    keeps the messages it posts in `messages`, to update them when the interrupt closes."""
    from holdpoint.aws import signing
    from holdpoint.outbound.slack import SlackChannel
    from holdpoint.outbound.webhooks import WebhookChannel

    return {"notify.webhook": WebhookChannel(),
            "notify.slack": SlackChannel(signing, store.read_interrupt if store is not None else None,
                                          messages=messages)}
