"""S1: a Slack message follows its interrupt. The notifier (real engine, moto's in-process AWS)
posts a raised interrupt through the real `slack_sdk` client to a local fake of the Slack Web API
and keeps the message's `{channel, ts}`; the interrupt's closing event, however it was decided
(API resume, expiry, ...), updates that message: the outcome, who, when, and no buttons.

Over HTTP on the local stack: tests/e2e/test_slack_e2e.py."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.aws.deliveries import DeliveryLog
from holdpoint.aws.events import EventBus
from holdpoint.aws.outbox import events as outbox_events
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.timers import Timers
from holdpoint.core import notify
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.answers import Answer
from holdpoint.core.state import Interrupt
from holdpoint.notify.service import Notifier
from holdpoint.notify.slack import SlackChannel, message_key
from holdpoint.notify.slack_blocks import Decided, decided_blocks, decided_by, outcome_of
from holdpoint.notify.slack_config import SlackConfig
from tests.harness import Harness
from tests.slack_fake import SlackFake, click_body, sign
from tests.unit.test_api import CONTEXT, http_event, load_handler, parse
from tests.unit.test_approver_policies import asking
from tests.unit.test_notify import stream_batch

BOT, SIGNING = "xoxb-unit-bot", "unit-signing-secret"
"""As tests/unit/test_slack.py has them: a resolved secret is cached for the process."""
PREFIX = "secretsmanager:holdpoint/tenants/t1"
OPS = {"slack": {"channel": "#ops", "bot_token": f"{PREFIX}/slack-bot", "signing_secret": f"{PREFIX}/slack-signing"}}
LEADS = {"slack": {**OPS["slack"], "channel": "#leads"}}


@pytest.fixture
def fake(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackFake]:
    """The fake Slack, the tenant's Slack secrets, the event bus and the notification DLQ."""
    sm, sqs = boto3.client("secretsmanager"), boto3.client("sqs")
    sm.create_secret(Name="holdpoint/tenants/t1/slack-bot", SecretString=BOT)
    sm.create_secret(Name="holdpoint/tenants/t1/slack-signing", SecretString=SIGNING)
    boto3.client("events").create_event_bus(Name="notify")
    monkeypatch.setenv("EVENT_BUS_NAME", "notify")
    monkeypatch.setenv("NOTIFY_DLQ_URL", sqs.create_queue(QueueName="notify-dlq")["QueueUrl"])
    server = SlackFake()
    monkeypatch.setenv("HOLDPOINT_SLACK_API_URL", server.url)
    yield server
    server.stop()


def notifier(h: Harness) -> Notifier:
    log = DeliveryLog()
    slack = SlackChannel(signing, h.store.read_interrupt, messages=log)
    return Notifier(h.store, EventBus(), log, Timers(), signing, {"notify.slack": slack}, "https://api.example.com")


def parked(*entries: dict[str, Any], **agent: Any) -> Harness:
    h = Harness(agent={"notify": list(entries), **agent})
    h.say("Email Bob")
    assert h.view()["status"] == "interrupted"
    return h


def stream(h: Harness, n: Notifier, kind: str) -> list[dict[str, Any]]:
    """Hand the notifier this session's event items of one type, as the stream does."""
    out = []
    for item in outbox_events(stream_batch(h, kind), h.store):
        body = n.on_event(item.tenant, item.session_id, item.event)
        assert body is not None
        out.append(body)
    return out


def updates(fake: SlackFake) -> list[dict[str, Any]]:
    return [args for method, _, args in fake.calls if method == "chat.update"]


def blocks(args: dict[str, Any]) -> list[dict[str, Any]]:
    raw = args["blocks"]
    return json.loads(raw) if isinstance(raw, str) else list(raw)


def test_s1_resume_through_the_api_updates_the_message_posted(fake: SlackFake) -> None:
    h = parked(OPS)
    n = notifier(h)
    stream(h, n, "session.interrupted")
    [(ts, posted)] = fake.posts
    assert [b["type"] for b in blocks(posted)][-1] == "actions"
    iid = h.open_interrupt()["interrupt_id"]
    h.resume(iid, {"approved": True})
    [closing] = stream(h, n, "session.interrupt_resumed")
    assert closing["type"] == "interrupt.resolved" and closing["generation"] == h.state().interrupts[iid].generation
    [update] = updates(fake)
    assert (update["ts"], update["channel"]) == (ts, "C0FAKE")
    assert "actions" not in [b["type"] for b in blocks(update)]  # the buttons are gone
    assert update["text"].startswith("Send the email?\nApproved by user-1 (client) at 20")
    _, context = blocks(update)
    assert context["elements"][0]["text"] == "Approved" and context["elements"][1]["type"] == "plain_text"
    assert BOT not in json.dumps(update)


def test_s1_expiry_updates_the_message(fake: SlackFake) -> None:
    h = parked(OPS)
    n = notifier(h)
    stream(h, n, "session.interrupted")
    h.wake(h.open_interrupt()["interrupt_id"], "expired")
    [closing] = stream(h, n, "session.interrupt_resumed")
    assert closing["type"] == "interrupt.expired"
    [update] = updates(fake)
    assert update["ts"] == fake.posts[0][0]
    assert "\nExpired (cancelled) at 20" in update["text"] and " by " not in update["text"]


def test_s1_a_redelivered_closing_event_updates_once(fake: SlackFake) -> None:
    h = parked(OPS)
    n = notifier(h)
    stream(h, n, "session.interrupted")
    stream(h, n, "session.interrupted")  # the stream delivers at least once: one post
    assert len(fake.posts) == 1
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": False})
    stream(h, n, "session.interrupt_resumed")
    stream(h, n, "session.interrupt_resumed")
    [update] = updates(fake)
    assert "\nDenied by user-1 (client)" in update["text"]


def test_s1_a_failed_update_is_retried_then_dead_lettered(fake: SlackFake, aws: dict[str, str]) -> None:
    h = parked(OPS, retry={"webhook": {"max_attempts": 2}})
    n = notifier(h)
    stream(h, n, "session.interrupted")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    answer = fake.answer

    def failing(method: str, token: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "chat.update":
            fake.calls.append((method, token, args))
            return {"ok": False, "error": "internal_error"}
        return answer(method, token, args)

    fake.answer = failing  # type: ignore[method-assign]
    [closing] = stream(h, n, "session.interrupt_resumed")
    key, log = f"{closing['event_id']}#0", DeliveryLog()
    first = log.read("t1", h.session_id or "", key)
    assert first is not None and (first.status, first.attempt) == ("retrying", 1)
    assert "internal_error" in (first.last_error or "")
    fired = [t.message for t in Timers().pending()]
    [retry] = [m for m in fired if m.get("kind") == "notify"]
    assert retry["key"] == key and retry["attempt"] == 2
    n.retry(work_message(retry))
    n.retry(work_message(retry))  # a repeated timer message runs nothing
    assert len(updates(fake)) == 2
    assert getattr(log.read("t1", h.session_id or "", key), "status", None) == "dead"
    got = boto3.client("sqs").receive_message(QueueUrl=os.environ["NOTIFY_DLQ_URL"]).get("Messages", [])
    [letter] = [json.loads(m["Body"]) for m in got]
    assert (letter["kind"], letter["attempts"], letter["event"]["type"]) == ("notify.dead", 2, "interrupt.resolved")
    assert "internal_error" in letter["error"] and BOT not in json.dumps(letter)


def test_s1_two_slack_entries_update_two_messages(fake: SlackFake) -> None:
    h = parked(OPS, LEADS)
    n = notifier(h)
    stream(h, n, "session.interrupted")
    assert [args["channel"] for _, args in fake.posts] == ["#ops", "#leads"]
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    stream(h, n, "session.interrupt_resumed")
    assert sorted(u["ts"] for u in updates(fake)) == sorted(ts for ts, _ in fake.posts)


def test_s1_a_message_never_posted_is_not_updated(fake: SlackFake, monkeypatch: pytest.MonkeyPatch) -> None:
    h = parked(OPS, LEADS)
    n = notifier(h)
    monkeypatch.setenv("HOLDPOINT_SLACK_API_URL", "http://127.0.0.1:9/api/")  # nothing listens: no post
    stream(h, n, "session.interrupted")
    monkeypatch.setenv("HOLDPOINT_SLACK_API_URL", fake.url)
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    stream(h, n, "session.interrupt_resumed")
    assert fake.calls == []


def test_s1_a_slack_entry_that_posts_raised_interrupts_gets_their_closing_events() -> None:
    def entry(declared: dict[str, Any]) -> Any:
        [model] = AgentConfig.model_validate({"notify": [declared]}).notify or []
        return model

    only_raised = entry({**OPS, "events": ["interrupt.raised"]})
    assert notify.wants(only_raised, "interrupt.resolved") and notify.wants(only_raised, "interrupt.expired")
    assert not notify.wants(only_raised, "interrupt.reminded")
    assert not notify.wants(entry({"url": "https://h.example.com/", "events": ["interrupt.raised"]}),
                            "interrupt.resolved")
    assert not notify.wants(entry({**OPS, "events": ["interrupt.reminded"]}), "interrupt.resolved")


def test_s1_the_outcome_names_the_option_the_answer_and_never_the_payload() -> None:
    options = {"message": "Ship?", "metadata": {"options": [{"label": "Ship it", "value": {"go": 1}}, "hold"]}}
    assert outcome_of(closed(options, {"go": 1}, "answered")) == "Ship it"
    assert outcome_of(closed(options, "hold", "answered")) == "hold"
    assert outcome_of(closed(options, None, "cancelled")) == "Cancelled"
    assert outcome_of(closed({}, {"approved": False, "secret": "s3cr3t"}, "denied")) == "Denied"
    assert outcome_of(closed({}, {"approved": True, "x": 1}, "approved")) == "Approved"
    assert outcome_of(closed({}, {"anything": "s3cr3t"}, "answered")) == "Answered"
    gone = replace(closed({}, None, "answered"), status="expired", on_expiry="deny", approvals=[])
    assert outcome_of(gone) == "Expired (denied)"
    config = SlackConfig.model_validate({**OPS["slack"], "users": {"U1": "alice", "U2": "bob", "U3": "bob"}})
    assert decided_by({"subject": "alice", "origin": "client"}, config.users) == ("U1", "")
    assert decided_by({"subject": "bob", "origin": "client"}, config.users) == ("", "bob (client)")  # two: no guess
    unmapped = SlackConfig.model_validate(OPS["slack"])
    assert decided_by({"subject": "slack:U9", "origin": "client"}, unmapped.users) == ("U9", "")
    assert decided_by({"subject": "expiry", "origin": "system"}, unmapped.users) == ("", "")
    text, shown = decided_blocks("Ship?", Decided(outcome="<!channel>", at="t", subject="<!here> (operator)"))
    assert text == "Ship?\n&lt;!channel&gt; by &lt;!here&gt; (operator) at t"
    assert all(e["type"] == "plain_text" for e in shown[1]["elements"])  # nothing sent as markup
    assert message_key("i", 0, unmapped) != message_key("i", 1, unmapped) != message_key(
        "i", 1, SlackConfig.model_validate(LEADS["slack"]))


@pytest.fixture
def handlers(fake: SlackFake) -> Iterator[None]:
    """The functions' assembly built afresh on this test's AWS and Slack, and forgotten after."""
    assembly.reset()
    yield
    assembly.reset()


@pytest.mark.usefixtures("handlers")
def test_s1_a_click_short_of_the_quorum_keeps_the_buttons_and_the_deciding_one_updates(fake: SlackFake) -> None:
    slack = {**OPS["slack"], "users": {"U1": "ann", "U2": "bob"}}
    h = Harness(asking(), agent={"approval": {"subjects": ["ann", "bob"], "quorum": 2}, "notify": [{"slack": slack}]})
    h.say("Email Bob")
    stream(h, notifier(h), "session.interrupted")
    [(ts, message)] = fake.posts
    channels = load_handler("channels")
    route = "POST /v1/channels/slack/interactions"

    def click(user: str) -> dict[str, Any]:
        body = click_body(message, ts, 0, user=user)
        event = http_event("POST", "/v1/channels/slack/interactions", raw_body=body, tenant=None, route_key=route)
        event["headers"].update({k.lower(): v for k, v in sign(SIGNING, body).items()})
        status, out = parse(channels.handler(event, CONTEXT))
        assert status == 200, out
        return dict(out)

    assert click("U1")["noop"] is False
    assert updates(fake) == [] and h.state().interrupts["int-ok"].status == "open"  # bob may still answer
    assert click("U2")["noop"] is False
    [update] = updates(fake)
    assert update["ts"] == ts and "\nApprove by <@U2> at " in update["text"]


def test_s1_an_interrupt_closed_while_its_post_was_on_its_way_is_updated_by_the_post(fake: SlackFake) -> None:
    """A retried post racing the closing event (which found no message yet) updates the message itself."""
    h = parked(OPS)
    iid = h.open_interrupt()["interrupt_id"]
    reads = [h.store.read_interrupt("t1", h.session_id or "", iid)]
    h.resume(iid, {"approved": True})
    reads.append(h.store.read_interrupt("t1", h.session_id or "", iid))  # open when posting, resolved after
    log = DeliveryLog()
    channel = SlackChannel(signing, lambda *_: reads.pop(0) if len(reads) > 1 else reads[0], messages=log)
    channel.deliver({"type": "interrupt.raised", "tenant": "t1", "session_id": h.session_id, "interrupt_id": iid},
                    OPS, {})
    [(ts, _)] = fake.posts
    [update] = updates(fake)
    assert update["ts"] == ts and "\nApproved by user-1 (client) at 20" in update["text"]
    generation = h.state().interrupts[iid].generation
    assert log.posted("t1", h.session_id or "", message_key(iid, generation, SlackConfig.model_validate(OPS["slack"])))


def closed(payload: object, answer: object, verdict: str) -> Interrupt:
    """An interrupt resolved by one answer with this verdict."""
    return Interrupt("int-1", "worker", "confirm", None, "2026-01-01T00:00:00.000Z", "k", status="resolved",
                     payload=payload, resolution=answer,
                     approvals=(Answer.from_item({"subject": "ann", "status": verdict}),))
