"""The email notify channel (docs/NOTIFICATIONS.md, "Email") on moto's in-process AWS: the real
engine parks a turn, the notifier renders the interrupt's email as it claims the delivery and
sends it through SES v2 (moto keeps what it sent), and a throttle is retried through the outbox's
durable timers while a refusal of the message (`MessageRejected`) is dead-lettered at once.

Over HTTP on the local stack, followed in Chromium: tests/e2e/test_email_channel_e2e.py.
The attacks (markup, header injection, a huge argument): tests/security/test_email_channel_attacks.py."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends
from pydantic import ValidationError

from holdpoint.aws import signing
from holdpoint.aws.deliveries import DeliveryLog
from holdpoint.aws.events import EventBus
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.timers import Timers
from holdpoint.core import notify
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import first_error
from holdpoint.notify import channels
from holdpoint.notify.service import Notifier
from holdpoint.outbound.declared import check_agent
from holdpoint.services import links
from holdpoint_local.faults import Faults
from tests.harness import Harness, declaring, seed_worker
from tests.unit.test_notify import bus as bus  # noqa: F401 - the bus and the DLQ, as the webhook tests have them
from tests.unit.test_notify import raised

SENDER = "approvals@holdpoint.example"
TEAM = ["ann@example.com", "bob@example.com"]
ENTRY = {"email": {"to": TEAM}, "events": ["interrupt.raised"], "approver": "ann"}
ASK = {"reason": "confirm", "payload": {"message": "Send the report to Bob?"}, "expires_in": 3600,
       "on_expiry": "deny", "approval": {"subjects": ["ann", "bob"], "quorum": 1}}


def sent(since: int = 0) -> list[Any]:
    """What moto's SES kept (its documented way to read sent messages in process), from `since` on
    (its backend outlives one test's mock)."""
    return list(ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages)[since:]


def approvers_of(html: str) -> dict[str, str]:
    """The links in a message's HTML part: {option: the approver it was minted for}."""
    tokens = re.findall(r'href="https://api\.example\.com/v1/links/([^"]+)"', html)
    read = [links.read(signing, token, time.time()) for token in tokens]
    return {link.option: link.approver for link in read}


def emailing(monkeypatch: pytest.MonkeyPatch, *, verified: bool = True, ask: dict[str, Any] | None = None,
             **agent: Any) -> tuple[Harness, Notifier]:
    """A session parked on send_email whose agent emails `TEAM`, and a notifier with the email channel."""
    monkeypatch.setenv("HOLDPOINT_EMAIL_FROM", SENDER)
    if verified:
        boto3.client("sesv2").create_email_identity(EmailIdentity=SENDER)
    h = Harness(declaring(seed_worker(), ask or ASK), agent={"notify": [ENTRY], **agent})
    h.say("Email Bob")
    assert h.view()["status"] == "interrupted"
    n = Notifier(h.store, EventBus(), DeliveryLog(), Timers(), signing, {"notify.email": channels.email()},
                 "https://api.example.com")
    return h, n


# --- the declaration -------------------------------------------------------------------------


def test_email_channel_entry_is_its_own_kind() -> None:
    agent = AgentConfig.model_validate({"notify": [ENTRY]})
    assert notify.channel_of(agent.wire()["notify"][0]) == "notify.email"
    check_agent(agent, "acme")


@pytest.mark.parametrize(("email", "param"), [
    ({"to": ["not-an-address"]}, "notify[0].email.to[0]"),
    ({"to": ["ann@example.com", "bob@example.com\r\nBcc: eve@evil.example"]}, "notify[0].email.to[1]"),
    ({"to": ["Ann <ann@example.com>"]}, "notify[0].email.to[0]"),
    ({"to": ["ann@example.com,eve@evil.example"]}, "notify[0].email.to[0]"),
    ({"to": [f"u{i}@example.com" for i in range(11)]}, "notify[0].email.to"),
    ({"to": []}, "notify[0].email.to"),
    ({"to": ["ann@example.com", "ANN@example.com"]}, "notify[0].email.to"),
    ({}, "notify[0].email.to"),
    ({"to": ["ann@example.com"], "cc": ["eve@evil.example"]}, "notify[0].email.cc"),
])
def test_email_channel_bad_recipients_are_a_400_naming_the_field(email: dict[str, Any], param: str) -> None:
    agent = AgentConfig.model_validate({"notify": [{"email": email}]})
    with pytest.raises(Refusal) as err:
        check_agent(agent, "acme")
    assert (err.value.code, err.value.param) == ("validation_error", param)


def test_email_channel_an_entry_with_unknown_fields_names_them() -> None:
    with pytest.raises(ValidationError) as err:
        AgentConfig.model_validate({"notify": [{"email": {"to": TEAM}, "url": "https://h.example.com/"}]})
    assert first_error(err.value)[0].startswith("notify[0]")
    with pytest.raises(ValidationError) as err:
        AgentConfig.model_validate({"notify": [{"email": {"to": TEAM}, "colour": "red"}]})
    assert first_error(err.value)[0] == "notify[0].colour"


# --- the message -----------------------------------------------------------------------------


def test_email_channel_sends_the_question_action_policy_expiry_and_links(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    h, n = emailing(monkeypatch)
    before = len(sent())
    body = raised(h, n)
    [message] = sent(before)
    assert (message.source, message.destinations["ToAddresses"]) == (SENDER, TEAM)
    assert message.subject == "Approval needed: Send the report to Bob?"
    html = message.body
    for shown in ("Send the report to Bob?", "confirm", "<code>send_email</code>", "<th>to</th>",
                  "<code>&quot;bob&quot;</code>", "Who may answer: ann, bob; 1 approval needed",
                  "then it answers deny", ">Approve</a>", ">Deny</a>"):
        assert shown in html
    # the signed links every channel has (one answer wins on any), minted for the entry's approver
    assert approvers_of(html) == {"approve": "key:ann", "deny": "key:ann"}
    assert DeliveryLog().read("t1", h.session_id or "", f"{body['event_id']}#0").status == "delivered"  # type: ignore[union-attr]


def test_email_channel_plain_text_part_says_the_same(aws: dict[str, str], bus: str,  # noqa: F811
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    h, n = emailing(monkeypatch)
    body = raised(h, n)
    interrupt = h.store.read_interrupt("t1", h.session_id or "", body["interrupt_id"])
    text = n.channels["notify.email"].prepare(body, ENTRY, interrupt)["text"]
    assert "Send the report to Bob?" in text and "Action: send_email" in text and '  to: "bob"' in text
    assert "Who may answer: ann, bob; 1 approval needed" in text
    assert f"Approve: {body['links']['approve']}" in text and f"Deny: {body['links']['deny']}" in text


# --- retries through the outbox ------------------------------------------------------------


def test_email_channel_a_throttled_send_is_retried_by_the_outbox_timer(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    h, n = emailing(monkeypatch)
    mail = n.channels["notify.email"]
    faults = Faults(anywhere=True).attach(mail.mailer().client)  # type: ignore[attr-defined]
    faults.inject("sesv2", "SendEmail", "TooManyRequestsException", first=3)  # botocore's 3 attempts
    body = raised(h, n)
    key = f"{body['event_id']}#0"
    state = DeliveryLog().read("t1", h.session_id or "", key)
    assert state is not None and (state.status, state.attempt) == ("retrying", 1)
    assert "TooManyRequestsException" in (state.last_error or "")
    [timer] = Timers().pending()
    n.retry(work_message(timer.message))
    n.retry(work_message(timer.message))  # the timer's message delivered twice sends once
    assert faults.sites[(None, "sesv2", "SendEmail")] == 4  # three refused, then the retry's one send
    assert DeliveryLog().read("t1", h.session_id or "", key).status == "delivered"  # type: ignore[union-attr]


def test_email_channel_a_rejected_message_is_dead_lettered_at_once(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    h, n = emailing(monkeypatch, verified=False)  # SES refuses an unverified sender: MessageRejected
    body = raised(h, n)
    key = f"{body['event_id']}#0"
    state = DeliveryLog().read("t1", h.session_id or "", key)
    assert state is not None and (state.status, state.attempt) == ("dead", 1)
    assert "MessageRejected" in (state.last_error or "") and Timers().pending() == []
    got = boto3.client("sqs").receive_message(QueueUrl=bus.replace("watch", "notify-dlq")).get("Messages", [])
    [letter] = [json.loads(m["Body"]) for m in got]
    assert (letter["kind"], letter["key"], letter["attempts"]) == ("notify.dead", key, 1)
    assert "MessageRejected" in letter["error"]


def test_email_channel_a_deployment_without_a_sender_is_dead_lettered(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    h, n = emailing(monkeypatch)
    monkeypatch.setenv("HOLDPOINT_EMAIL_FROM", "")
    body = raised(h, n)
    state = DeliveryLog().read("t1", h.session_id or "", f"{body['event_id']}#0")
    assert state is not None and state.status == "dead" and "EmailSenderIdentity" in (state.last_error or "")


def test_email_channel_a_reminder_and_an_escalation_say_so(aws: dict[str, str], bus: str,  # noqa: F811
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    h, n = emailing(monkeypatch)
    body = raised(h, n)
    interrupt = h.store.read_interrupt("t1", h.session_id or "", body["interrupt_id"])
    mail = n.channels["notify.email"]
    for kind, heading in (("interrupt.reminded", "Reminder: approval needed"),
                          ("interrupt.escalated", "Escalated: approval needed")):
        prepared = mail.prepare({**body, "type": kind}, ENTRY, interrupt)
        assert prepared["subject"] == f"{heading}: Send the report to Bob?"
    assert mail.prepare({**body, "type": "interrupt.resolved"}, ENTRY, interrupt) == {}  # closing: nothing to send
