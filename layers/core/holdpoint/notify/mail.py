"""Email as a notify channel: an interrupt that waits (raised, reminded, escalated) is sent to the
entry's recipients through SES v2, from the deployment's verified identity, with one signed link
per option, the same links a webhook gets (minted for the entry's `approver`), so one answer wins
on every channel.

The message is rendered once, in the notifier, as the delivery is claimed (`prepare`, which has
the interrupt as raised: its policy, action and expiry), and kept in the delivery record, so every
attempt, the engine's retries included, sends the same message. Throttling and SES being down are
retried on the notifier's durable timers; a refusal of the message itself (`MessageRejected`)
is dead-lettered at once. Closing and answered events send nothing: the link page says when a
request is closed."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.notify import WAITING
from holdpoint.core.state import Interrupt
from holdpoint.notify import mail_config
from holdpoint.notify.mail_render import render
from holdpoint.ports import DeliveryFailed, DeliveryRefused, Mailer, Throttled, Unavailable

PREPARED = ("subject", "text", "html")


class MailChannel:
    """`ports.NotifyChannel` for `{email: {to}, events?, approver?}` entries."""

    def __init__(self, mailer: Callable[[], Mailer], sender: Callable[[], str]) -> None:
        self.mailer = mailer
        self.sender = sender

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject:
        """The message of a waiting event of an open interrupt; nothing for any other event."""
        if event.get("type") not in WAITING or interrupt is None or interrupt.status != "open":
            return {}
        found = event.get("links")
        links = {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}
        return render(event, interrupt, links).fields()

    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        """Send the prepared message to the entry's recipients, re-checked here (a worker may
        replace the config in force). An entry or deployment that can never send is refused for
        good; SES throttled or down is retried."""
        message = [(prepared or {}).get(key) for key in PREPARED]
        if not all(isinstance(part, str) for part in message):
            return  # not a waiting event of an open interrupt: nothing to send
        subject, text, html = (str(part) for part in message)
        try:
            to = mail_config.parsed(entry.get("email")).to
        except ValidationError as exc:
            raise DeliveryRefused(f"email: the entry's recipients are not valid: {exc.errors()[0]['msg']}") from None
        sender = self.sender()
        if not sender:
            raise DeliveryRefused("email: the deployment declares no sender identity (EmailSenderIdentity)")
        try:
            self.mailer().send(sender, to, subject, text, html)
        except (Throttled, Unavailable) as exc:
            raise DeliveryFailed(f"email: {str(exc)[:300]}") from exc
