"""Email through Amazon SES v2 (`SendEmail`), from the deployment's verified identity
(template.yaml's `EmailSenderIdentity`, given to the functions that send as `HOLDPOINT_EMAIL_FROM`).

SES answers a refusal of the message itself (`MessageRejected`, an unverified sender or recipient,
a paused account) with a 4xx that sending again would meet again: raised as `DeliveryRefused`, so
the notifier dead-letters it at once. Throttling and 5xx are `ports.Throttled`/`Unavailable`
(`clients.refusal`), for the channel to retry.
"""

from __future__ import annotations

import os
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.errors import Refused
from holdpoint.ports import DeliveryRefused

FROM_ENV = "HOLDPOINT_EMAIL_FROM"
CHARSET = "UTF-8"


def sender() -> str:
    """The address notifications are sent from (empty: the deployment declares none)."""
    return os.environ.get(FROM_ENV, "")


class SesMailer:
    """`ports.Mailer` on SES v2: one message with a plain text and an HTML part."""

    def __init__(self, client: Any = None) -> None:
        self.client = client or clients.client("sesv2")

    def send(self, sender: str, to: list[str], subject: str, text: str, html: str) -> str:
        """The message id SES gave the message."""
        content = {"Simple": {"Subject": {"Data": subject, "Charset": CHARSET}, "Body": {
            "Text": {"Data": text, "Charset": CHARSET}, "Html": {"Data": html, "Charset": CHARSET}}}}
        try:
            out = self.client.send_email(FromEmailAddress=sender, Destination={"ToAddresses": list(to)},
                                         Content=content)
        except Refused as exc:
            raise DeliveryRefused(f"email: SES refused the message: {exc.code}: {exc.message}") from exc
        return str(out.get("MessageId", ""))
