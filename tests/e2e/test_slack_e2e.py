"""Slack over HTTP on the local stack: the channel posts an interrupt with its options as buttons
through the real `slack_sdk` client to a local fake of the Slack Web API; a correctly signed click
on `POST /v1/channels/slack/interactions` resumes the interrupt once (one `interrupt.resumed`) and
updates the message; a wrongly signed, stale, tampered or unmapped click is a 4xx that records
nothing and sends nothing; decided anywhere else (the API), the message is updated all the same (S1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode

import pytest
import requests

from holdpoint.aws.store import session_pk
from tests.security.probes import table_count
from tests.slack_fake import SlackFake, click_body, sign
from tests.stack import Api, resumed_triggers, seed_worker, wait_execution, worker_answering
from tests.waiting import wait_for

BOT_TOKEN = "xoxb-e2e-bot-token"
SIGNING = "e2e-slack-signing-secret"
OPTIONS = [{"label": "Send it", "value": {"approved": True}}, {"label": "Don't", "value": {"approved": False}}]


@pytest.fixture
def stack(local_stack_factory: Callable[..., Any], worker: Any, slack_fake: SlackFake) -> Any:
    return slack_stack(local_stack_factory, slack_fake)


def slack_stack(local_stack_factory: Callable[..., Any], slack_fake: SlackFake) -> Any:
    """The local stack with the Slack channel pointed at the fake, and the tenant's Slack secrets."""
    stack = local_stack_factory(extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
                                           "HOLDPOINT_SLACK_API_URL": slack_fake.url})
    sm = stack.client("secretsmanager")
    sm.create_secret(Name=f"holdpoint/tenants/dev/{stack.stack_name}/slack-bot", SecretString=BOT_TOKEN)
    sm.create_secret(Name=f"holdpoint/tenants/dev/{stack.stack_name}/slack-signing", SecretString=SIGNING)
    return stack


@pytest.fixture
def options_worker(api: Api, stack: Any) -> Iterator[list[dict[str, Any]]]:
    """The seed worker, asking with options (whose values it reads as any answer: the option's value
    is its `payload`); its agent notifies Slack, where the Slack user U0ALICE is the subject alice."""

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any] | None:
        out = seed_worker.decide(trigger, proposed)
        for action in (out or {}).get("actions", []):
            if action["type"] == "interrupt":
                action["payload"]["metadata"] = {"options": OPTIONS}
        return out

    with worker_answering(api, answer, notify=[entry(stack, users={"U0ALICE": "alice"})]) as seen:
        yield seen


def entry(stack: Any, **extra: Any) -> dict[str, Any]:
    prefix = f"secretsmanager:holdpoint/tenants/dev/{stack.stack_name}"
    return {"slack": {"channel": "#approvals", "bot_token": f"{prefix}/slack-bot",
                      "signing_secret": f"{prefix}/slack-signing", **extra}}


def posted(api: Api, stack: Any, slack_fake: SlackFake) -> tuple[str, str, str, dict[str, Any]]:
    """A parked session whose interrupt the notifier posted to Slack: (session, interrupt, ts, message)."""
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")

    def message() -> tuple[str, dict[str, Any]] | None:
        for ts, args in list(slack_fake.messages.items()):
            if sid in json.dumps([b for b in args["blocks"] if b["type"] == "context"]):  # it names the session
                return ts, args
        return None

    ts, args = wait_for(message, "the interrupt posted to Slack", describe=lambda: slack_fake.calls)
    wait_for(lambda: delivered(stack, sid), "the post's delivery finished (its message kept, S1)")
    return sid, iid, ts, args


def delivered(stack: Any, sid: str) -> bool:
    """Every notification delivery of session `sid` finished: nothing more is written for it."""
    items = stack.client("dynamodb").query(
        TableName=stack.env["TABLE_NAME"], KeyConditionExpression="PK = :p AND begins_with(SK, :d)",
        ExpressionAttributeValues={":p": {"S": session_pk(stack.tenant, sid)}, ":d": {"S": "D#evt_"}})["Items"]
    return bool(items) and all(item["status"]["S"] == "delivered" for item in items)


def click(stack: Any, body: str, headers: dict[str, str]) -> requests.Response:
    return requests.post(f"{stack.base_url}/v1/channels/slack/interactions", data=body, headers=headers, timeout=60)


def test_slack_posts_options_as_buttons_and_a_signed_click_resumes_once(
        api: Api, stack: Any, slack_fake: SlackFake, options_worker: list[dict[str, Any]]) -> None:
    sid, iid, ts, message = posted(api, stack, slack_fake)
    [(method, token, _)] = slack_fake.calls
    assert (method, token, message["channel"], message["text"]) == ("chat.postMessage", BOT_TOKEN, "#approvals",
                                                                     "Send the email?")
    assert [b["text"]["text"] for b in message["blocks"][-1]["elements"]] == ["Send it", "Don't"]

    body = click_body(message, ts, 0, user="U0ALICE")
    ok = click(stack, body, sign(SIGNING, body))
    assert ok.status_code == 200 and ok.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    view = api.wait_status(sid, "done")
    assert view["messages"][2]["content"] == "sent"
    wait_execution(stack, sid, iid, "SUCCEEDED")
    [trigger] = resumed_triggers(options_worker, sid)
    assert (trigger["payload"], trigger["verdict"], trigger["channel"]) == ({"approved": True}, "approved", "slack")
    assert trigger["responder"] == {"subject": "alice", "origin": "client"}
    [resumed] = [e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]
    assert (resumed.get("data") or resumed)["responder"]["subject"] == "alice"
    # The click updates its message, and the closing event (S1) updates it the same way again.
    both = wait_for(lambda: len(updated(slack_fake, ts)) == 2 and updated(slack_fake, ts), "two updates of the message",
                    describe=lambda: slack_fake.calls)
    for update in both:
        assert "Send it by <@U0ALICE> at " in update["text"]
        assert "actions" not in [b["type"] for b in blocks(update)]  # the buttons are gone

    again = click(stack, body, sign(SIGNING, body))  # Slack retries: a no-op, no further update
    assert again.status_code == 200 and again.json()["noop"] is True
    assert len(resumed_triggers(options_worker, sid)) == 1
    assert [m for m, _, _ in slack_fake.calls].count("chat.update") == 2


def test_n4_a_post_slack_refused_is_posted_by_the_engines_retry_and_its_buttons_open(
        api: Api, stack: Any, slack_fake: SlackFake, options_worker: list[dict[str, Any]]) -> None:
    """The notifier's first post is refused (`ratelimited`); the retry runs in the engine on its durable
    timer, whose role may not read the deployment's signing key, and still posts buttons a click
    opens: they were sealed where the key is, when the delivery was claimed."""
    slack_fake.refuse_posts = 1
    sid, iid, ts, message = posted(api, stack, slack_fake)
    assert [m for m, _, _ in slack_fake.calls] == ["chat.postMessage", "chat.postMessage"]
    body = click_body(message, ts, 1, user="U0ALICE")
    ok = click(stack, body, sign(SIGNING, body))
    assert ok.status_code == 200 and ok.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    assert api.wait_status(sid, "done")["messages"][2]["content"] == "declined"


def updated(slack_fake: SlackFake, ts: str) -> list[dict[str, Any]]:
    """Every `chat.update` of the message posted at `ts`."""
    return [args for m, _, args in list(slack_fake.calls) if m == "chat.update" and args.get("ts") == ts]


def blocks(args: dict[str, Any]) -> list[dict[str, Any]]:
    raw = args["blocks"]
    return json.loads(raw) if isinstance(raw, str) else list(raw)


def test_s1_a_resume_through_the_api_updates_the_slack_message(
        api: Api, stack: Any, slack_fake: SlackFake, options_worker: list[dict[str, Any]]) -> None:
    """S1 over HTTP: decided through `POST .../resume`, not Slack, the message still says so."""
    sid, iid, ts, _ = posted(api, stack, slack_fake)
    resp = api.resume(sid, iid, {"status": "resolved", "payload": {"approved": False}})
    assert resp.status_code == 200 and resp.json()["noop"] is False, resp.text
    [update] = wait_for(lambda: updated(slack_fake, ts), "the Slack message updated",
                        describe=lambda: slack_fake.calls)
    assert update["channel"] == "C0FAKE"
    assert update["text"].startswith("Send the email?\nDon't by ") and " (client) at 20" in update["text"]
    assert "actions" not in [b["type"] for b in blocks(update)]  # the buttons are gone
    assert BOT_TOKEN not in json.dumps(update) and SIGNING not in json.dumps(update)
    assert [m for m, _, _ in slack_fake.calls] == ["chat.postMessage", "chat.update"]


def test_slack_bad_clicks_are_refused_and_record_nothing(
        api: Api, stack: Any, slack_fake: SlackFake, options_worker: list[dict[str, Any]]) -> None:
    sid, iid, ts, message = posted(api, stack, slack_fake)
    body = click_body(message, ts, 1, user="U0ALICE")
    before, events = table_count(stack), len(api.events(sid))

    def refused(resp: requests.Response, status: int, code: str, param: str) -> None:
        assert resp.status_code == status, resp.text
        assert resp.json()["error"]["code"] == code and resp.json()["error"]["param"] == param

    refused(click(stack, body, sign("not-the-signing-secret", body)), 401, "unauthorized", "x-slack-signature")
    refused(click(stack, body, sign(SIGNING, body, timestamp=1_600_000_000)), 401, "unauthorized",
            "x-slack-signature")  # a replay of an old request
    refused(click(stack, body, {"Content-Type": "application/x-www-form-urlencoded"}), 401, "unauthorized",
            "x-slack-signature")
    mallory = click_body(message, ts, 0, user="U0MALLORY")
    refused(click(stack, mallory, sign(SIGNING, mallory)), 403, "forbidden", "payload.user")
    tampered = json.loads(parse_qs(body)["payload"][0])
    tampered["actions"][0]["value"] = tampered["actions"][0]["value"][:-4] + "AAAA"
    forged = urlencode({"payload": json.dumps(tampered)})
    refused(click(stack, forged, sign(SIGNING, forged)), 400, "validation_error", "payload.actions")
    refused(click(stack, "payload=%7Bnot-json", sign(SIGNING, "payload=%7Bnot-json")), 400, "validation_error",
            "payload")

    assert table_count(stack) == before and len(api.events(sid)) == events
    assert api.view(sid)["status"] == "interrupted" and resumed_triggers(options_worker, sid) == []
    assert [m for m, _, _ in slack_fake.calls] == ["chat.postMessage"]  # nothing sent


def test_slack_declaration_with_a_literal_secret_is_refused_over_http(
        api: Api, stack: Any, slack_fake: SlackFake, worker: Any) -> None:
    before = table_count(stack)
    for field, value, param in (
            ("bot_token", "xoxb-a-literal-token", "notify[0].slack.bot_token"),
            ("signing_secret", "a-literal-secret", "notify[0].slack.signing_secret"),
            ("bot_token", "secretsmanager:holdpoint/tenants/other/slack-bot", "notify[0].slack.bot_token")):
        declared = entry(stack)
        declared["slack"][field] = value
        resp = api.req("PUT", "/v1/agents/assistant", {
            "llm": {"provider": "scripted", "script": []}, "worker": {"url": worker[0]}, "notify": [declared]})
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"]["code"] == "validation_error" and resp.json()["error"]["param"] == param
    assert table_count(stack) == before and slack_fake.calls == []
