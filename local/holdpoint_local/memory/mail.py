"""`ports.Mailer` in memory: SES v2 `SendEmail` as aws/mail.py meets it. A message from a sender
that is no verified identity (the address, or its domain) is refused with `DeliveryRefused` and
nothing is kept, as SES answers `MessageRejected`; a message sent is kept as it was sent, with the
id it was given."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

from holdpoint.ports import DeliveryRefused


@dataclass(frozen=True)
class Sent:
    message_id: str
    sender: str
    to: tuple[str, ...]
    subject: str
    text: str
    html: str


class MemoryMailer:
    """The identities that may send (`verify`), and what was sent, in order."""

    def __init__(self) -> None:
        self.identities: set[str] = set()
        self.sent: list[Sent] = []
        self._lock = threading.Lock()

    def verify(self, identity: str) -> None:
        self.identities.add(identity)

    def send(self, sender: str, to: list[str], subject: str, text: str, html: str) -> str:
        if sender not in self.identities and sender.rpartition("@")[2] not in self.identities:
            raise DeliveryRefused("email: SES refused the message: MessageRejected: "
                                  f"Email address not verified {sender}")
        message = Sent(f"mem-{uuid.uuid4().hex}", sender, tuple(to), subject, text, html)
        with self._lock:
            self.sent.append(message)
        return message.message_id
