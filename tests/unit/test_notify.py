"""Notifications (docs/NOTIFICATIONS.md) on moto's in-process AWS: the real engine raises the
interrupt, the notifier reads the event items its transaction wrote (as the stream hands them
over), publishes on EventBridge (a rule with an SQS target, read here) and delivers to the
declared entries through a recording channel; links are sealed under the deployment's key.

Over HTTP, with the stream and the webhook for real: tests/e2e/test_notify_e2e.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from unittest.mock import Mock

import boto3
import pytest
from pydantic import ValidationError

from holdpoint.aws import signing
from holdpoint.aws.deliveries import DeliveryLog
from holdpoint.aws.errors import ThrottledCall, UnavailableCall
from holdpoint.aws.events import EventBus
from holdpoint.aws.outbox import events as outbox_events
from holdpoint.aws.outbox import session_of
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.store import session_pk
from holdpoint.aws.timers import Timers
from holdpoint.core import notify, sealing
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import first_error
from holdpoint.notify.service import Notifier
from holdpoint.outbound.declared import check_agent
from holdpoint.ports import DeliveryFailed, DeliveryState
from holdpoint.services import links, sessions
from holdpoint.services.resume import resume
from tests.harness import Harness
from tests.unit.test_approver_policies import ANN, BOB, board
from tests.unit.test_events_contract import bus_to_queue

HOOK = {"url": "https://hooks.example.com/h", "events": ["interrupt.raised", "interrupt.resolved"]}


class Recording:
    """A NotifyChannel that records each delivery and fails the first `fail` of them; with `ahead`,
    it prepares that (refused as AWS throttling for the first `refuse_prepare` claims) and records
    what each attempt was handed."""

    def __init__(self, fail: int = 0, ahead: dict[str, Any] | None = None, refuse_prepare: int = 0) -> None:
        self.got: list[tuple[dict[str, Any], dict[str, Any], dict[str, str]]] = []
        self.fail = fail
        self.ahead, self.refuse_prepare = ahead or {}, refuse_prepare
        self.prepares = 0
        self.handed: list[dict[str, Any] | None] = []

    def prepare(self, event: dict[str, Any], entry: dict[str, Any], interrupt: Any) -> dict[str, Any]:
        self.prepares += 1
        if self.refuse_prepare > 0:
            self.refuse_prepare -= 1
            raise ThrottledCall({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "GetSecretValue")
        return self.ahead

    def deliver(self, event: dict[str, Any], entry: dict[str, Any], links: dict[str, str],
                prepared: dict[str, Any] | None = None) -> None:
        self.handed.append(prepared)
        self.got.append((event, entry, links))
        if self.fail > 0:
            self.fail -= 1
            raise DeliveryFailed("HTTP 500")


@pytest.fixture
def bus(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The bus, a rule sending every event to a queue (its URL is yielded), and the DLQ."""
    queue = bus_to_queue("notify", "watch")
    monkeypatch.setenv("EVENT_BUS_NAME", "notify")
    monkeypatch.setenv("NOTIFY_DLQ_URL", boto3.client("sqs").create_queue(QueueName="notify-dlq")["QueueUrl"])
    yield queue


def on_bus(queue: str) -> list[dict[str, Any]]:
    got = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in got]


def notifier(h: Harness, channel: Recording, base: str = "https://api.example.com") -> Notifier:
    return Notifier(h.store, EventBus(), DeliveryLog(), Timers(), signing, {"notify.webhook": channel}, base)


def stream_batch(h: Harness, kind: str) -> dict[str, Any]:
    """The stream's INSERT records of this session's event items of one type, as Lambda hands them over."""
    ddb = boto3.client("dynamodb")
    pk = session_pk(h.caller.tenant, h.session_id or "")
    items = ddb.query(TableName="holdpoint", KeyConditionExpression="PK = :p AND begins_with(SK, :e)",
                      ExpressionAttributeValues={":p": {"S": pk}, ":e": {"S": "E#"}})["Items"]
    return {"Records": [{"eventName": "INSERT", "dynamodb": {"NewImage": item, "SequenceNumber": str(i)}}
                        for i, item in enumerate(items) if item["etype"]["S"] == kind]}


def raised(h: Harness, notifier_: Notifier) -> dict[str, Any]:
    [item] = list(outbox_events(stream_batch(h, "session.interrupted"), h.store))
    out = notifier_.on_event(item.tenant, item.session_id, item.event)
    assert out is not None
    return out


def parked(aws: dict[str, str], **agent: Any) -> Harness:
    h = Harness(agent={"notify": [HOOK], **agent})
    h.say("Email Bob")
    assert h.view()["status"] == "interrupted"
    return h


# --- the notification --------------------------------------------------------------------


def test_n1_lifecycle_kinds_and_a_bounded_summary() -> None:
    assert notify.kind_of({"type": "session.interrupted"}) == "interrupt.raised"
    assert notify.kind_of({"type": "session.interrupt_resumed", "data": {"expired": False}}) == "interrupt.resolved"
    assert notify.kind_of({"type": "session.interrupt_resumed", "data": {"expired": True}}) == "interrupt.expired"
    assert notify.kind_of({"type": "message.added"}) is None
    text = notify.summary({"big": "x" * 5000})
    assert len(text) == notify.SUMMARY_CHARS and text.endswith("\u2026")
    assert notify.event_id("t", "s", 3) == notify.event_id("t", "s", 3) != notify.event_id("t", "s", 4)


def test_n1_outbox_reads_event_items_from_stream_records(aws: dict[str, str]) -> None:
    h = parked(aws)
    [item] = list(outbox_events(stream_batch(h, "session.interrupted"), h.store))
    assert (item.tenant, item.session_id, item.event["type"]) == ("t1", h.session_id, "session.interrupted")
    assert session_of("T#acme#S#ses_1") == ("acme", "ses_1") and session_of("KEY#abc") is None
    noise = {"Records": [{"eventName": "MODIFY", "dynamodb": {"NewImage": {"PK": {"S": "T#a#S#b"}, "SK": {"S": "H"}}}}]}
    assert list(outbox_events(noise, h.store)) == []


def test_n1_raised_is_published_once_with_links_and_delivered_once_per_entry(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    channel = Recording()
    n = notifier(h, channel)
    body = raised(h, n)
    iid = h.open_interrupt()["interrupt_id"]
    [event] = on_bus(bus)
    assert event["detail-type"] == "interrupt.raised" and event["source"] == "holdpoint"
    assert event["detail"] == body
    assert (body["session_id"], body["interrupt_id"], body["reason"], body["agent_id"]) == (
        h.session_id, iid, "confirm", "assistant")
    assert body["summary"] == '{"message":"Send the email?"}'
    assert set(body["links"]) == {"approve", "deny"}
    assert all(u.startswith("https://api.example.com/v1/links/") for u in body["links"].values())
    [(sent, entry, minted)] = channel.got
    assert sent["event_id"] == body["event_id"] and entry == HOOK and set(minted) == {"approve", "deny"}
    # The stream delivers at least once: the bus gets the same event id again, the webhook nothing more.
    again = raised(h, n)
    assert again["event_id"] == body["event_id"]
    assert [e["detail"]["event_id"] for e in on_bus(bus)] == [body["event_id"]]
    assert len(channel.got) == 1


def test_n1_events_the_entry_did_not_ask_for_are_not_delivered(aws: dict[str, str], bus: str) -> None:
    h = parked(aws, notify=[{**HOOK, "events": ["interrupt.expired"]}])
    channel = Recording()
    raised(h, notifier(h, channel))
    assert channel.got == [] and len(on_bus(bus)) == 1


def test_n1_resolved_carries_the_responder_and_no_links(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    channel = Recording()
    [item] = list(outbox_events(stream_batch(h, "session.interrupt_resumed"), h.store))
    body = notifier(h, channel).on_event(item.tenant, item.session_id, item.event)
    assert body is not None and body["type"] == "interrupt.resolved" and "links" not in body
    assert body["responder"] == {"subject": "user-1", "origin": "client"}
    assert [e["detail-type"] for e in on_bus(bus)] == ["interrupt.resolved"]


# --- declarations ---------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "param"), [
    ({"url": "https://h.example.com/", "events": ["interrupt.exploded"]}, "notify[0].events[0]"),
    ({"url": "https://h.example.com/", "colour": "red"}, "notify[0].colour"),
    ({"events": ["interrupt.raised"]}, "notify[0]"),
    ("https://h.example.com/", "notify[0]"),
])
def test_n2_a_malformed_notify_entry_names_its_field(entry: Any, param: str) -> None:
    with pytest.raises(ValidationError) as err:
        AgentConfig.model_validate({"notify": [entry]})
    assert first_error(err.value)[0] == param


@pytest.mark.parametrize(("entry", "param"), [
    ({"url": "https://169.254.169.254/"}, "notify[0].url"),
    ({"url": "http://hooks.example.com/"}, "notify[0].url"),  # https in the cloud
    ({"url": "https://h.example.com/", "secret": "plain-text"}, "notify[0].secret"),
    ({"url": "https://h.example.com/", "secret": "secretsmanager:holdpoint/tenants/other/x"}, "notify[0].secret"),
])
def test_n2_webhooks_follow_the_worker_url_and_secret_rules(entry: dict[str, Any], param: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS", raising=False)
    with pytest.raises(Refusal) as err:
        check_agent(AgentConfig.model_validate({"notify": [entry]}), "acme")
    assert (err.value.code, err.value.param) == ("validation_error", param)


def test_n2_a_slack_entry_is_its_own_kind() -> None:
    slack = {"channel": "#ops", "bot_token": "secretsmanager:holdpoint/tenants/acme/slack-bot",
             "signing_secret": "secretsmanager:holdpoint/tenants/acme/slack-signing"}
    config = AgentConfig.model_validate({"notify": [{"slack": slack}, HOOK]})
    assert [notify.channel_of(e) for e in config.wire()["notify"]] == ["notify.slack", "notify.webhook"]
    check_agent(config, "acme")  # the webhook rules do not apply to a Slack entry (its own do: test_slack.py)


# --- links ----------------------------------------------------------------------------------


def link_token(body: dict[str, Any], option: str) -> str:
    return str(body["links"][option].rsplit("/", 1)[1])


def test_n3_opening_a_link_changes_nothing_and_following_it_resumes_once(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    body = raised(h, notifier(h, Recording()))
    token = link_token(body, "deny")
    before = h.state().header.version
    page = links.show(h.store, signing, token)
    assert (page["status"], page["option"], page["approver"], page["reason"]) == ("open", "deny", "user-1", "confirm")
    assert h.state().header.version == before and h.view()["status"] == "interrupted"
    out = links.follow(h.store, h.parking, signing, token, "deny")
    assert out.resumed.noop is False
    h.wake(body["interrupt_id"], "resumed")
    assert [t["payload"] for t in h.triggers("interrupt.resumed")] == [{"approved": False}]
    assert links.follow(h.store, h.parking, signing, token, "deny").resumed.noop is True
    assert links.follow(h.store, h.parking, signing, link_token(body, "approve"), "approve").resumed.noop is True
    assert links.show(h.store, signing, token)["status"] == "resolved"


def test_n3_tampered_expired_or_unconfirmed_links_are_refused(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    body = raised(h, notifier(h, Recording()))
    token = link_token(body, "approve")
    claims, mac = token.split(".")
    forged = signing.seal("inbox-cursor", json.loads(sealing.unb64(claims)))  # another purpose's key
    for bad in (claims + "." + mac[::-1], forged, "x" * 5000, "nodot"):
        with pytest.raises(Refusal) as err:
            links.show(h.store, signing, bad)
        assert (err.value.code, err.value.param) == ("invalid_link", "token")
    with pytest.raises(Refusal) as err:
        links.follow(h.store, h.parking, signing, token, None, clock=lambda: time.time() + links.LINK_TTL_SECS + 1)
    assert err.value.code == "link_expired"
    for confirm in (None, "deny"):
        with pytest.raises(Refusal) as err:
            links.follow(h.store, h.parking, signing, token, confirm)
        assert (err.value.code, err.value.param) == ("validation_error", "confirm")
    assert h.view()["status"] == "interrupted"


def test_n3_a_link_is_useless_for_the_interrupt_raised_again_under_its_id(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    body = raised(h, notifier(h, Recording()))
    iid = body["interrupt_id"]
    h.resume(iid, {"approved": True})
    h.settle()
    sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id or "", reason="again", payload=None,
                             global_=False, interrupt_id=iid, expires_in=None, request_id="r-again")
    assert [i["interrupt_id"] for i in h.view()["interrupts"]] == [iid]  # open again, a new generation
    old = link_token(body, "approve")
    assert links.show(h.store, signing, old)["status"] == "closed"
    assert links.follow(h.store, h.parking, signing, old, "approve").resumed.noop is True
    assert [i["interrupt_id"] for i in h.view()["interrupts"]] == [iid]  # still open


def test_n3_one_link_per_declared_option_answers_with_that_option(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    h.settle()
    options = [{"label": "Ship it", "value": "ship"}, {"label": "Hold", "value": {"hold": 2}}]
    iid = sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id or "", reason="review",
                                   payload={"message": "Ship?", "metadata": {"options": options}}, global_=False,
                                   interrupt_id=None, expires_in=None, request_id="r-options").interrupt_id
    interrupt = h.state().interrupts[iid]
    minted = links.mint(signing, "https://api.example.com", h.caller.tenant, h.session_id or "", interrupt,
                        "key:ann", time.time())
    assert set(minted) == {"option-0", "option-1"}
    token = minted["option-1"].rsplit("/", 1)[1]
    assert links.show(h.store, signing, token)["label"] == "Hold"
    stray = signing.seal(links.PURPOSE, {**json.loads(sealing.unb64(token.split(".")[0])), "o": "option-7"})
    with pytest.raises(Refusal) as err:  # signed, but for an option this interrupt does not offer
        links.follow(h.store, h.parking, signing, stray, "option-7")
    assert (err.value.code, err.value.param) == ("invalid_link", "token")
    assert links.follow(h.store, h.parking, signing, token, "option-1").resumed.noop is False
    closed = h.state().interrupts[iid]  # the option's value, as every channel delivers it
    assert closed.resolution == {"hold": 2} and closed.approvals[-1].channel == "link"


def test_n3_links_are_minted_only_for_interrupts_a_client_may_clear(aws: dict[str, str], bus: str) -> None:
    h = parked(aws)
    interrupt = h.state().interrupts[h.open_interrupt()["interrupt_id"]]
    interrupt.origin = "operator"
    assert links.mint(signing, "https://api.example.com", "t1", "s", interrupt, "key:ann", time.time()) == {}
    interrupt.origin = "worker"
    assert links.mint(signing, "", "t1", "s", interrupt, "key:ann", time.time()) == {}  # no API to point at


# --- retries and the DLQ ----------------------------------------------------------------------


def test_n4_a_failed_delivery_retries_on_a_timer_once_per_attempt_then_dead_letters(
        aws: dict[str, str], bus: str) -> None:
    h = parked(aws, retry={"webhook": {"max_attempts": 2}})
    channel = Recording(fail=5)
    n = notifier(h, channel)
    body = raised(h, n)
    key = f"{body['event_id']}#0"
    log = DeliveryLog()
    assert log.read("t1", h.session_id or "", key) == DeliveryState("retrying", 1, "HTTP 500")
    [timer] = Timers().pending()
    fired = timer.message
    assert fired == {"kind": "notify", "key": key, "attempt": 2, "tenant": "t1", "session_id": h.session_id,
                     "schedule": timer.name}
    n.retry(work_message(fired))
    n.retry(work_message(fired))  # SQS delivers at least once: the second copy runs nothing
    assert len(channel.got) == 2
    assert log.read("t1", h.session_id or "", key).status == "dead"  # type: ignore[union-attr]
    got = boto3.client("sqs").receive_message(QueueUrl=bus.replace("watch", "notify-dlq")).get("Messages", [])
    [letter] = [json.loads(m["Body"]) for m in got]
    assert (letter["kind"], letter["attempts"], letter["error"], letter["key"]) == ("notify.dead", 2, "HTTP 500", key)


def test_n4_a_refused_dead_letter_send_is_retried_on_a_timer_and_delivers_nothing_more(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    h = parked(aws, retry={"webhook": {"max_attempts": 2}})
    channel = Recording(fail=5)
    n = notifier(h, channel)
    key = f"{raised(h, n)['event_id']}#0"
    [timer] = Timers().pending()
    real = n.deliveries.dead_letter
    monkeypatch.setattr(n.deliveries, "dead_letter", Mock(side_effect=ThrottledCall(
        {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "SendMessage")))
    n.retry(work_message(timer.message))  # the last attempt fails, and so does its dead letter's send
    log = DeliveryLog()
    assert log.read("t1", h.session_id or "", key) == DeliveryState("retrying", 2, "HTTP 500")
    [again] = [t for t in Timers().pending() if t.message["attempt"] == 3]
    monkeypatch.setattr(n.deliveries, "dead_letter", real)
    n.retry(work_message(again.message))
    n.retry(work_message(again.message))  # a repeated timer message sends nothing twice
    assert len(channel.got) == 2  # the dead letter's retry called the webhook no more
    assert log.read("t1", h.session_id or "", key).status == "dead"  # type: ignore[union-attr]
    got = boto3.client("sqs").receive_message(QueueUrl=bus.replace("watch", "notify-dlq"),
                                              MaxNumberOfMessages=10).get("Messages", [])
    [letter] = [json.loads(m["Body"]) for m in got]
    assert (letter["kind"], letter["attempts"], letter["error"], letter["key"]) == ("notify.dead", 2, "HTTP 500", key)


def test_n4_a_dead_letter_goes_even_when_its_record_and_its_error_cannot_be_read_or_written(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dead letter's send refused, then the record of that refused too, then the read of the
    last error on the retry: the timer still brings the retry, and the letter goes (without its error)."""
    h = parked(aws, retry={"webhook": {"max_attempts": 1}})
    n = notifier(h, Recording(fail=5))
    throttled = ThrottledCall({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "x")
    real_letter, real_finish, real_read = n.deliveries.dead_letter, n.deliveries.finish, n.deliveries.read
    monkeypatch.setattr(n.deliveries, "dead_letter", Mock(side_effect=throttled))
    monkeypatch.setattr(n.deliveries, "finish", Mock(side_effect=throttled))
    key = f"{raised(h, n)['event_id']}#0"
    [timer] = Timers().pending()
    assert timer.message["attempt"] == 2 and DeliveryLog().read("t1", h.session_id or "", key).status == "sending"  # type: ignore[union-attr]
    monkeypatch.setattr(n.deliveries, "dead_letter", real_letter)
    monkeypatch.setattr(n.deliveries, "finish", real_finish)
    monkeypatch.setattr(n.deliveries, "read", Mock(side_effect=throttled))
    n.retry(work_message(timer.message))
    monkeypatch.setattr(n.deliveries, "read", real_read)
    assert DeliveryLog().read("t1", h.session_id or "", key).status == "dead"  # type: ignore[union-attr]
    got = boto3.client("sqs").receive_message(QueueUrl=bus.replace("watch", "notify-dlq"),
                                              MaxNumberOfMessages=10).get("Messages", [])
    [letter] = [json.loads(m["Body"]) for m in got]
    assert (letter["kind"], letter["attempts"], letter["error"], letter["key"]) == ("notify.dead", 1, "", key)


def test_n4_a_bus_failure_raises_so_the_stream_retries(aws: dict[str, str], bus: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    h = parked(aws)
    monkeypatch.setenv("EVENT_BUS_NAME", "no-such-bus")
    channel = Recording()
    with pytest.raises(Exception):  # noqa: B017 - moto answers an unknown bus with its own error
        raised(h, notifier(h, channel))
    assert channel.got == []  # nothing delivered before the event is on the bus


def test_n1_expiry_is_published_as_interrupt_expired(aws: dict[str, str], bus: str) -> None:
    h = parked(aws, notify=[{**HOOK, "events": ["interrupt.expired"]}])
    h.wake(h.open_interrupt()["interrupt_id"], "expired")
    channel = Recording()
    [item] = list(outbox_events(stream_batch(h, "session.interrupt_resumed"), h.store))
    body = notifier(h, channel).on_event(item.tenant, item.session_id, item.event)
    assert body is not None and body["type"] == "interrupt.expired"
    assert body["responder"] == {"subject": "expiry", "origin": "system"}
    assert [e["detail-type"] for e in on_bus(bus)] == ["interrupt.expired"]
    assert [sent["type"] for sent, _, _ in channel.got] == ["interrupt.expired"]


def test_n4_a_webhook_entry_a_worker_mangled_fails_its_delivery_not_the_stream(aws: dict[str, str]) -> None:
    from holdpoint.notify.webhooks import WebhookChannel

    event = {"event_id": "evt_1", "type": "interrupt.raised", "tenant": "t1"}
    for entry in ({"url": 12}, {"url": "https://h.example.com/", "secret": ["x"]},
                  {"url": "https://169.254.169.254/"}, {"url": "https://h.example.com/", "secret": "plain"}):
        with pytest.raises(DeliveryFailed):
            WebhookChannel().deliver(event, entry, {})


# --- answers short of a quorum (A2) -------------------------------------------------------------


def interrupt_item(h: Harness, iid: str) -> dict[str, Any]:
    key = {"PK": {"S": session_pk(h.caller.tenant, h.session_id or "")}, "SK": {"S": f"I#{iid}"}}
    return boto3.client("dynamodb").get_item(TableName="holdpoint", Key=key, ConsistentRead=True)["Item"]


def modified(old: dict[str, Any], new: dict[str, Any], seq: str = "9") -> dict[str, Any]:
    """The stream record of one interrupt item change, as Lambda hands it over (NEW_AND_OLD_IMAGES)."""
    return {"Records": [{"eventName": "MODIFY", "dynamodb": {"OldImage": old, "NewImage": new, "SequenceNumber": seq}}]}


def test_n1_an_answer_short_of_the_quorum_is_published_once_as_answered(aws: dict[str, str], bus: str) -> None:
    h = board(notify=[{"url": "https://hooks.example.com/h"}])
    before = interrupt_item(h, "int-ok")
    assert resume(h.store, h.parking, ANN, h.session_id or "", "int-ok", {"approved": True},
                  comment="fine by me").noop is False
    after = interrupt_item(h, "int-ok")
    channel = Recording()
    n = notifier(h, channel)
    [item] = list(outbox_events(modified(before, after), h.store))
    body = n.on_event(item.tenant, item.session_id, item.event)
    assert body is not None and body["type"] == "interrupt.answered"
    assert (body["interrupt_id"], body["answers"], body["quorum"]) == ("int-ok", 1, 2)
    assert body["answer"] == {"subject": "ann", "origin": "operator", "status": "approved", "comment": "fine by me"}
    [event] = on_bus(bus)
    assert event["detail-type"] == "interrupt.answered" and event["detail"]["event_id"] == body["event_id"]
    [(sent, _, _)] = channel.got
    assert sent["event_id"] == body["event_id"]
    # Redelivered, the same event: the webhook is not told twice.
    [again] = list(outbox_events(modified(before, after), h.store))
    assert n.on_event(again.tenant, again.session_id, again.event)["event_id"] == body["event_id"]
    assert len(channel.got) == 1
    # A change of the open interrupt that adds no answer, and the deciding answer, are no `answered`.
    assert list(outbox_events(modified(after, after), h.store)) == []
    resume(h.store, h.parking, BOB, h.session_id or "", "int-ok", {"approved": True})
    assert list(outbox_events(modified(after, interrupt_item(h, "int-ok")), h.store)) == []


@pytest.mark.parametrize("accept", ["application/json", "text/html"])
def test_n3_a_token_the_router_cannot_match_is_an_invalid_link_as_documented(accept: str) -> None:
    """A token holding a character Powertools' router does not match (`"`) is refused like any
    other invalid token (400 `invalid_link`, page or JSON), not with Powertools' own 404 body,
    which the OpenAPI document does not describe."""
    from holdpoint.http import links_api

    event = {"version": "2.0", "routeKey": "GET /v1/links/{token}", "rawPath": '/v1/links/a"b',
             "rawQueryString": "", "headers": {"accept": accept}, "isBase64Encoded": False,
             "requestContext": {"http": {"method": "GET", "path": '/v1/links/a"b'}, "stage": "$default"},
             "pathParameters": {"token": 'a"b'}}
    out = links_api.build().resolve(event, None)
    assert out["statusCode"] == 400
    assert ("invalid_link" in out["body"]) and ("statusCode" not in out["body"])


def test_n4_a_refused_timer_after_a_failed_attempt_is_set_by_the_redelivered_record(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scheduler refuses the retry's timer after the failure is recorded: the stream hands the
    record back, and the redelivery sets the timer (once) instead of leaving the delivery stranded."""
    h = parked(aws)
    channel = Recording(fail=1)
    n = notifier(h, channel)
    real = n.timers.schedule
    monkeypatch.setattr(n.timers, "schedule", Mock(side_effect=UnavailableCall(
        {"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "CreateSchedule")))
    with pytest.raises(UnavailableCall):
        raised(h, n)
    assert Timers().pending() == []
    monkeypatch.setattr(n.timers, "schedule", real)
    raised(h, n)  # the stream's retry of the record
    raised(h, n)  # and a duplicate of it: still one timer
    [timer] = Timers().pending()
    n.retry(work_message(timer.message))
    assert len(channel.got) == 2
    key = timer.message["key"]
    assert DeliveryLog().read("t1", h.session_id or "", key).status == "delivered"  # type: ignore[union-attr]


def test_n4_what_the_channel_prepares_is_made_once_and_handed_to_every_attempt(
        aws: dict[str, str], bus: str) -> None:
    """`prepare` (the notifier seals there) refused by AWS claims nothing: the stream hands the record
    back. The redelivery prepares and claims it; the first attempt and the retry on its timer (run by
    the engine, which could not prepare) are both handed what was prepared, from the record."""
    h = parked(aws)
    channel = Recording(fail=1, ahead={"buttons": ["sealed-0"], "generation": 0}, refuse_prepare=1)
    n = notifier(h, channel)
    with pytest.raises(ThrottledCall):
        raised(h, n)
    assert channel.got == [] and Timers().pending() == []
    raised(h, n)  # the stream's retry of the record
    [timer] = Timers().pending()
    n.retry(work_message(timer.message))
    assert channel.prepares == 2 and channel.handed == [channel.ahead, channel.ahead]
    key = timer.message["key"]
    assert DeliveryLog().read("t1", h.session_id or "", key).status == "delivered"  # type: ignore[union-attr]


def test_n4_a_refused_record_of_a_failed_attempt_still_sets_its_retry(
        aws: dict[str, str], bus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB refuses to record a failed attempt: the timer is set anyway, and its attempt runs
    from the record still `sending` at the failed attempt."""
    h = parked(aws)
    channel = Recording(fail=1)
    n = notifier(h, channel)
    real = n.deliveries.finish

    def refuse_retrying(tenant: str, session_id: str, key: str, attempt: int, status: str,
                        error: str | None = None) -> None:
        if status == "retrying":
            raise ThrottledCall({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "UpdateItem")
        real(tenant, session_id, key, attempt, status, error)

    monkeypatch.setattr(n.deliveries, "finish", refuse_retrying)
    raised(h, n)
    [timer] = Timers().pending()
    key = timer.message["key"]
    assert DeliveryLog().read("t1", h.session_id or "", key).status == "sending"  # type: ignore[union-attr]
    raised(h, n)  # a redelivered stream record starts nothing more
    n.retry(work_message(timer.message))
    n.retry(work_message(timer.message))  # a repeated timer message runs nothing
    assert len(channel.got) == 2
    assert DeliveryLog().read("t1", h.session_id or "", key).status == "delivered"  # type: ignore[union-attr]
