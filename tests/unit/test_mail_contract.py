"""The `ports.Mailer` contract (docs/NOTIFICATIONS.md, "Email"), held by SES v2 on moto
(aws/mail.py) and its in-memory twin (memory/mail.py): a message from a verified identity (the
address, or its domain) is sent as it was given, with an id; one from any other sender is refused
with `DeliveryRefused` (SES's `MessageRejected`) and nothing is sent.

moto keeps the HTML part of a two-part message as its `body` and the text part as `text` (fix 35,
local/README.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from holdpoint.ports import DeliveryRefused
from holdpoint_local.memory.mail import MemoryMailer
from tests.twins import side

Read = Callable[[], list[tuple[str, tuple[str, ...], str, str, str]]]
"""(sender, recipients, subject, text, html) of each message sent, in order."""
Verify = Callable[[str], None]


def _in_memory() -> tuple[Any, Verify, Read]:
    memory = MemoryMailer()
    return memory, memory.verify, lambda: [(m.sender, m.to, m.subject, m.text, m.html) for m in memory.sent]


def _on_ses() -> tuple[Any, Verify, Read]:
    from holdpoint.aws.mail import SesMailer

    backend = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    before = len(backend.sent_messages)

    def verify(identity: str) -> None:
        boto3.client("sesv2").create_email_identity(EmailIdentity=identity)

    def read() -> list[tuple[str, tuple[str, ...], str, str, str]]:
        return [(m.source, tuple(m.destinations["ToAddresses"]), m.subject, m.text, m.body)
                for m in backend.sent_messages[before:]]

    return SesMailer(), verify, read


@pytest.fixture(params=["memory", "ses"])
def mailer(request: pytest.FixtureRequest) -> tuple[Any, Verify, Read]:
    return side(request, _in_memory, _on_ses)


def test_email_channel_contract_a_verified_sender_sends_the_message_as_given(mailer: tuple[Any, Verify, Read]) -> None:
    sender, verify, sent = mailer
    verify("approvals@contract.example")
    verify("team.example")
    first = sender.send("approvals@contract.example", ["a@x.example", "b@x.example"], "Approve? \u2713",
                        "text", "<p>h\u00e9llo</p>")
    second = sender.send("anyone@team.example", ["c@x.example"], "s", "t", "<p>2</p>")
    assert first and second and first != second
    assert sent() == [("approvals@contract.example", ("a@x.example", "b@x.example"), "Approve? \u2713", "text",
                       "<p>h\u00e9llo</p>"), ("anyone@team.example", ("c@x.example",), "s", "t", "<p>2</p>")]


def test_email_channel_contract_an_unverified_sender_is_refused_and_sends_nothing(
        mailer: tuple[Any, Verify, Read]) -> None:
    sender, verify, sent = mailer
    verify("approvals@contract.example")
    with pytest.raises(DeliveryRefused, match="MessageRejected"):
        sender.send("eve@elsewhere.example", ["a@x.example"], "s", "t", "<p>h</p>")
    assert sent() == []
