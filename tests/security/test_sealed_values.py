"""Sealed values a person can click or follow (Slack buttons, one-click links) answer only the raise
they were minted for, and only until it can no longer be answered; an interrupt id raised again
after DynamoDB's TTL deleted its closed item (A6) takes a generation no earlier raise had, so no old
button, link, park or wake message reaches it and its ParkBranch execution has a name of its own.

In process, on moto's AWS with the real engine: the notifier posts through the real `slack_sdk`
client to the local Slack fake, clicks go through the channels function's handler, links through
`services.links`. TTL's deletion is played by deleting the closed interrupt's item."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

import boto3
import pytest

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.aws.deliveries import DeliveryLog
from holdpoint.aws.events import EventBus
from holdpoint.aws.outbox import events as outbox_events
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.store import session_pk
from holdpoint.aws.timers import Timers
from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import DEFAULT_PARK_SECONDS
from holdpoint.notify.service import Notifier
from holdpoint.notify.slack import SEAL_PURPOSE, SlackChannel
from holdpoint.notify.slack_config import SlackConfig, check_declaration
from holdpoint.services import links
from tests.harness import Harness
from tests.slack_fake import SlackFake, click_body, sign
from tests.unit.test_api import CONTEXT, http_event, load_handler, parse
from tests.unit.test_notify import stream_batch

BOT, SIGNING = "xoxb-unit-bot", "unit-signing-secret"
"""As tests/unit/test_slack.py has them: a resolved secret is cached for the process."""
PREFIX = "secretsmanager:holdpoint/tenants/t1"
OPS = {"slack": {"channel": "#ops", "bot_token": f"{PREFIX}/slack-bot", "signing_secret": f"{PREFIX}/slack-signing",
                 "users": {"U1": "user-1"}}}
IID = "int-same"
ROUTE = "POST /v1/channels/slack/interactions"


@pytest.fixture
def fake(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackFake]:
    """The fake Slack, the tenant's Slack secrets, the event bus, the notification DLQ, and the
    functions' assembly built afresh on this test's AWS."""
    sm, sqs = boto3.client("secretsmanager"), boto3.client("sqs")
    sm.create_secret(Name="holdpoint/tenants/t1/slack-bot", SecretString=BOT)
    sm.create_secret(Name="holdpoint/tenants/t1/slack-signing", SecretString=SIGNING)
    boto3.client("events").create_event_bus(Name="notify")
    monkeypatch.setenv("EVENT_BUS_NAME", "notify")
    monkeypatch.setenv("NOTIFY_DLQ_URL", sqs.create_queue(QueueName="notify-dlq")["QueueUrl"])
    server = SlackFake()
    monkeypatch.setenv("HOLDPOINT_SLACK_API_URL", server.url)
    assembly.reset()
    yield server
    assembly.reset()
    server.stop()


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def asking_the_same_id() -> Any:
    """A worker that asks before every tool under one interrupt id, each time with another message."""
    asked = iter(range(1, 100))

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        trigger = req["trigger"]
        if trigger["type"] == "tool.execute":
            return {"actions": [{"type": "interrupt", "interrupt_id": IID, "reason": "approve",
                                 "payload": {"message": f"Send email number {next(asked)}?"}}]}
        if trigger["type"] == "interrupt.resumed":
            return {"actions": [{"type": "tool.result", "result": "not sent"}]}
        return dict(req["proposed"])

    return decide


def session(**agent: Any) -> Harness:
    h = Harness(asking_the_same_id(), agent={"notify": [OPS], **agent})
    ask(h)
    return h


def ask(h: Harness) -> None:
    """A new turn whose tool call raises `IID` (again)."""
    h.say("Email Bob")
    assert h.state().interrupts[IID].status == "open"


def notifier(h: Harness) -> Notifier:
    log = DeliveryLog()
    slack = SlackChannel(signing, h.store.read_interrupt, messages=log)
    return Notifier(h.store, EventBus(), log, Timers(), signing, {"notify.slack": slack}, "https://api.example.com")


def post(h: Harness, fake: SlackFake) -> tuple[str, dict[str, Any]]:
    """Hand the notifier the session's raise events, as the stream does; the message posted last."""
    n = notifier(h)
    for item in outbox_events(stream_batch(h, "session.interrupted"), h.store):
        n.on_event(item.tenant, item.session_id, item.event)
    return fake.posts[-1]


def click(body: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """The interaction request through the channels function, as API Gateway hands it over."""
    event = http_event("POST", "/v1/channels/slack/interactions", raw_body=body, tenant=None, route_key=ROUTE)
    event["headers"].update({k.lower(): v for k, v in headers.items()})
    status, out = parse(load_handler("channels").handler(event, CONTEXT))
    return status, dict(out)


def answered_then_raised_again(h: Harness, *, deleted: bool = False) -> None:
    """The open raise answered through the API, (its closed item deleted by TTL,) and the id raised again."""
    assert h.resume(IID, {"approved": True}).noop is False
    if deleted:
        forget(h)
    ask(h)


def forget(h: Harness) -> None:
    """What DynamoDB's TTL does to a closed interrupt once its `retention_days` (A6) are over."""
    assert h.state().interrupts[IID].status != "open"
    boto3.client("dynamodb").delete_item(TableName="holdpoint", Key={
        "PK": {"S": session_pk("t1", h.session_id or "")}, "SK": {"S": f"I#{IID}"}})
    assert IID not in h.state().interrupts


def untouched(h: Harness, fake: SlackFake, updates: int = 0) -> None:
    """The raise now open is as raised: nothing answered it, no message was updated for it."""
    now = h.state().interrupts[IID]
    assert (now.status, now.approvals, now.responder) == ("open", (), None)
    assert [m for m, _, _ in fake.calls].count("chat.update") == updates


def test_sealed_slack_button_of_an_earlier_raise_is_refused(fake: SlackFake) -> None:
    h = session()
    ts, first = post(h, fake)
    answered_then_raised_again(h)
    _, second = post(h, fake)
    assert second["text"] == "Send email number 2?" != first["text"]
    body = click_body(first, ts, 0, user="U1")  # a fresh click on the first message's button
    status, out = click(body, sign(SIGNING, body))
    assert (status, out["error"]["code"], out["error"]["param"]) == (409, "conflict", "payload.actions")
    assert "changed" in out["error"]["message"]
    untouched(h, fake)


def test_sealed_button_binds_its_raise_and_without_an_expiry_lives_as_long_as_it_can_be_parked(
        fake: SlackFake) -> None:
    h = session()
    _, message = post(h, fake)
    raised = h.state().interrupts[IID]
    for button in message["blocks"][-1]["elements"]:
        sealed = signing.unseal(SEAL_PURPOSE, button["value"])
        assert sealed is not None and sealed["g"] == raised.generation
        assert sealed["x"] == int(epoch(raised.created_at) + DEFAULT_PARK_SECONDS)


def test_sealed_replayed_click_of_an_earlier_raise_is_refused(fake: SlackFake) -> None:
    h = session()
    ts, first = post(h, fake)
    body = click_body(first, ts, 0, user="U1")
    captured = sign(SIGNING, body)
    status, out = click(body, captured)
    assert status == 200 and out["noop"] is False
    h.wake(IID, "resumed")
    ask(h)
    post(h, fake)
    status, out = click(body, captured)  # byte for byte, inside Slack's five minutes
    assert (status, out["error"]["code"]) == (409, "conflict")
    untouched(h, fake, updates=1)  # the click's own update of the first message


def test_sealed_slack_button_of_a_raise_deleted_by_ttl_is_refused(fake: SlackFake) -> None:
    h = session()
    ts, first = post(h, fake)
    answered_then_raised_again(h, deleted=True)
    post(h, fake)
    body = click_body(first, ts, 1, user="U1")
    status, out = click(body, sign(SIGNING, body))
    assert (status, out["error"]["code"]) == (409, "conflict")
    untouched(h, fake)


def test_sealed_expired_button_is_refused_and_records_nothing(fake: SlackFake) -> None:
    h = session(interrupt_expires_in=600)
    ts, message = post(h, fake)
    value = message["blocks"][-1]["elements"][0]["value"]
    sealed = signing.unseal(SEAL_PURPOSE, value)
    stored = h.state().interrupts[IID]
    assert sealed is not None and stored.expires_at is not None
    assert (sealed["g"], sealed["x"]) == (stored.generation, int(epoch(stored.expires_at)))
    body = click_body(message, ts, 0, user="U1")
    later = SlackChannel(signing, h.store.read_interrupt, clock=lambda: epoch(stored.expires_at or "") + 1)
    with pytest.raises(Refusal) as exc:
        later.click(body, sign(SIGNING, body))
    assert (exc.value.code, exc.value.param) == ("action_expired", "payload.actions")
    assert "expired" in exc.value.message
    untouched(h, fake)
    before = SlackChannel(signing, h.store.read_interrupt, clock=lambda: epoch(stored.expires_at or "") - 1)
    assert before.click(body, sign(SIGNING, body)).generation == stored.generation


def test_sealed_button_without_a_generation_is_refused(fake: SlackFake) -> None:
    """A button sealed as before buttons carried their raise cannot say which raise it answers."""
    h = session()
    ts, message = post(h, fake)
    config = SlackConfig.model_validate(OPS["slack"]).model_dump(exclude_none=True)
    legacy = signing.seal(SEAL_PURPOSE, {"t": "t1", "s": h.session_id, "i": IID, "n": 0, "e": config})
    payload = json.loads(parse_qs(click_body(message, ts, 0, user="U1"))["payload"][0])
    payload["actions"][0]["value"] = legacy
    body = urlencode({"payload": json.dumps(payload)})
    status, out = click(body, sign(SIGNING, body))
    assert (status, out["error"]["code"]) == (409, "conflict")
    untouched(h, fake)


def test_sealed_button_value_fits_slacks_cap(fake: SlackFake) -> None:
    """The longest button a declaration can make is checked where it is declared (400 naming it)."""
    tenant = "t" * 100

    def declaration(of: str, users: int) -> dict[str, Any]:
        refs = f"secretsmanager:holdpoint/tenants/{of}"
        return {"channel": "#ops", "bot_token": f"{refs}/slack-bot", "signing_secret": f"{refs}/slack-signing",
                "users": {f"U{i:010d}": f"user-{i}@example.com" for i in range(users)}}

    users = 1
    while len(json.dumps(declaration(tenant, users + 1), separators=(",", ":"))) <= 1200:
        users += 1  # as many as the declaration's own cap allows
    with pytest.raises(Refusal) as exc:
        check_declaration(declaration(tenant, users), tenant, "notify[0]")
    assert (exc.value.code, exc.value.param) == ("validation_error", "notify[0].slack.users")
    check_declaration(declaration("t1", users), "t1", "notify[0]")
    longest = {"t": "t1", "s": "s" * 64, "i": "i" * 64, "g": 10**15, "x": 10**10, "n": 99,
               "e": SlackConfig.model_validate(declaration("t1", users)).model_dump(exclude_none=True)}
    assert len(signing.seal(SEAL_PURPOSE, longest)) == signing.sealed_length(longest) <= 2000


def test_sealed_link_after_ttl_deletion_resumes_nothing(fake: SlackFake) -> None:
    h = session()
    first = h.state().interrupts[IID]
    minted = links.mint(signing, "https://api.example.com", "t1", h.session_id or "", first, "key:user-1", time.time())
    token = minted["approve"].rsplit("/", 1)[-1]
    answered_then_raised_again(h, deleted=True)
    assert links.show(h.store, signing, token)["status"] == "closed"
    out = links.follow(h.store, h.parking, signing, token, "approve")
    assert out.resumed.noop is True
    untouched(h, fake)


def test_sealed_execution_name_differs_after_ttl_deletion(fake: SlackFake) -> None:
    h = session()
    first = h.state().interrupts[IID]
    answered_then_raised_again(h, deleted=True)
    second = h.state().interrupts[IID]
    assert second.generation > first.generation
    assert second.dedup_key != first.dedup_key
    first_park = h.parking.records.read("t1", h.session_id, IID, first.generation)
    second_park = h.parking.records.read("t1", h.session_id, IID, second.generation)
    assert first_park.handle and second_park.handle
    assert second_park.handle.rsplit(":", 1)[-1] == second.dedup_key != first_park.handle.rsplit(":", 1)[-1]


def test_sealed_park_and_wake_of_a_raise_deleted_by_ttl_leave_the_new_raise_alone(fake: SlackFake) -> None:
    h = session()
    old = h.state().interrupts[IID].generation
    answered_then_raised_again(h, deleted=True)
    stale = {"tenant": "t1", "session_id": h.session_id, "interrupt_id": IID, "generation": old}
    h.runner.handle(work_message({"kind": "park", "task_token": "token-of-the-deleted-raise", **stale}))
    h.runner.handle(work_message({"kind": "wake", "outcome": "expired", **stale}))
    now = h.state().interrupts[IID]
    assert now.status == "open" and h.token(IID) != "token-of-the-deleted-raise"
    assert h.view()["status"] == "interrupted"


@pytest.mark.parametrize("stamp", ["²", "١٧٠٠٠٠٠٠٠٠", "+1700000000", " 1700000000", "1_700_000_000", ""])
def test_sealed_click_with_a_timestamp_not_in_ascii_digits_is_401_not_a_500(fake: SlackFake, stamp: str) -> None:
    """A genuinely sealed button with a Slack timestamp that is not plain ASCII digits (slack_sdk
    would `int()` it) is refused as unsigned, naming the header, and answers nothing."""
    h = session()
    ts, message = post(h, fake)
    body = click_body(message, ts, 0, user="U1")
    headers = {**sign(SIGNING, body), "X-Slack-Request-Timestamp": stamp}
    status, out = click(body, headers)
    assert (status, out["error"]["param"]) == (401, "x-slack-request-timestamp")
    untouched(h, fake)
