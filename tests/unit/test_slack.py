"""The Slack channel (holdpoint.notify.slack) on moto's in-process AWS, with the real
`slack_sdk.WebClient` talking to a local fake of the Slack Web API: the declaration refuses
literal secrets, the message carries the options as Block Kit buttons, and a click is trusted only
with Slack's signature made with the signing secret its sealed button names."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlencode

import boto3
import pytest
from pydantic import ValidationError

from holdpoint.aws import signing
from holdpoint.core.answers import options_of
from holdpoint.core.errors import Refusal
from holdpoint.core.state import Interrupt, iso_ms
from holdpoint.http.resolver import prepare
from holdpoint.notify.slack import SlackChannel
from holdpoint.notify.slack_config import SlackNotify, check_declaration
from holdpoint.ports import DeliveryFailed, Posted
from tests.slack_fake import SlackFake, click_body, sign
from tests.unit.test_api import CONTEXT, http_event, load_handler, parse

BOT = "xoxb-unit-bot"
SIGNING = "unit-signing-secret"
ENTRY = {"slack": {"channel": "#ops", "bot_token": "secretsmanager:holdpoint/tenants/t1/slack-bot",
                   "signing_secret": "secretsmanager:holdpoint/tenants/t1/slack-signing"}}
INTERRUPT = {"interrupt_id": "int-1", "reason": "confirm",
             "payload": {"message": "<!channel> Deploy *now*?", "metadata": {"options": ["yes", {"label": "No",
                                                                                              "value": False}]}}}


@pytest.fixture
def fake(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackFake]:
    sm = boto3.client("secretsmanager")
    sm.create_secret(Name="holdpoint/tenants/t1/slack-bot", SecretString=BOT)
    sm.create_secret(Name="holdpoint/tenants/t1/slack-signing", SecretString=SIGNING)
    server = SlackFake()
    monkeypatch.setenv("HOLDPOINT_SLACK_API_URL", server.url)
    yield server
    server.stop()


def stored(status: str = "open") -> Interrupt:
    return Interrupt(interrupt_id="int-1", origin="worker", reason="confirm", anchor=None,
                     created_at=iso_ms(time.time()), dedup_key="d", status=status,  # type: ignore[arg-type]
                     payload=INTERRUPT["payload"])


def deliver(entry: dict[str, Any] = ENTRY) -> tuple[SlackChannel, str, Posted]:
    channel = SlackChannel(signing)
    sent = channel.post("t1", "sess-1", stored(), SlackNotify.model_validate(entry).slack,
                        {"open": "https://example.test/inbox"})
    return channel, sent.ts, sent


RAISED = {"type": "interrupt.raised", "tenant": "t1", "session_id": "sess-1", "interrupt_id": "int-1",
          "summary": "{...}", "links": {}}


def test_slack_notify_channel_posts_a_raised_interrupt_as_stored(fake: SlackFake) -> None:
    reads: list[tuple[str, str, str]] = []

    def read(tenant: str, session_id: str, interrupt_id: str) -> Interrupt:
        reads.append((tenant, session_id, interrupt_id))
        return stored()

    channel = SlackChannel(signing, read)
    channel.deliver(RAISED, ENTRY, {"approve": "https://example.test/v1/links/a"})
    [(method, _, args)] = fake.calls
    assert method == "chat.postMessage" and args["text"] == "&lt;!channel&gt; Deploy *now*?"  # escaped, never a ping
    assert [b["text"]["text"] for b in args["blocks"][-1]["elements"]] == ["yes", "No"]
    assert reads == [("t1", "sess-1", "int-1")]
    channel.deliver({**RAISED, "type": "interrupt.resolved"}, ENTRY, {})  # nothing to post
    SlackChannel(signing, lambda *_: stored("resolved")).deliver(RAISED, ENTRY, {})  # answered meanwhile
    SlackChannel(signing, lambda *_: None).deliver(RAISED, ENTRY, {})
    assert len(fake.calls) == 1


class NoKey:
    """A sealer where the deployment's key may not be read (the engine's role): every seal refused."""

    def seal(self, purpose: str, payload: Any) -> str:
        raise ValueError("AccessDenied: the signing key")

    def unseal(self, purpose: str, token: str) -> None:
        return None


def test_n4_a_retry_without_the_key_posts_the_buttons_prepared_where_the_key_is(fake: SlackFake) -> None:
    """`prepare` seals a raise's buttons in the notifier; an attempt in the engine, which may not read
    the key, posts those values, and seals nothing itself. Values prepared for another raise of the
    interrupt are not used: that attempt would have to seal, and without the key it fails, to be retried."""
    ahead = SlackChannel(signing, lambda *_: stored()).prepare(RAISED, ENTRY, stored())
    assert ahead["generation"] == 0 and len(ahead["buttons"]) == 2
    SlackChannel(NoKey(), lambda *_: stored()).deliver(RAISED, ENTRY, {}, ahead)
    [(_, _, args)] = fake.calls
    assert [b["value"] for b in args["blocks"][-1]["elements"]] == ahead["buttons"]
    assert signing.unseal("slack-action", ahead["buttons"][1])["n"] == 1
    with pytest.raises(DeliveryFailed, match="AccessDenied"):
        SlackChannel(NoKey(), lambda *_: replace(stored(), generation=1)).deliver(RAISED, ENTRY, {}, ahead)
    assert SlackChannel(signing).prepare({**RAISED, "type": "interrupt.resolved"}, ENTRY, stored()) == {}
    assert SlackChannel(signing).prepare(RAISED, ENTRY, stored("resolved")) == {}
    assert SlackChannel(signing).prepare(RAISED, {"slack": {"channel": "#ops"}}, stored()) == {}


def test_slack_notify_channel_failures_are_retried(fake: SlackFake, monkeypatch: pytest.MonkeyPatch) -> None:
    boto3.client("secretsmanager").create_secret(Name="holdpoint/tenants/t1/user-token", SecretString="xoxp-user")
    wrong = {"slack": {**ENTRY["slack"], "bot_token": "secretsmanager:holdpoint/tenants/t1/user-token"}}
    channel = SlackChannel(signing, lambda *_: stored())
    for entry in (wrong, {"slack": {**ENTRY["slack"], "bot_token": "secretsmanager:holdpoint/tenants/t1/none"}},
                  {"slack": {"channel": "#ops"}}):
        with pytest.raises(DeliveryFailed):
            channel.deliver(RAISED, entry, {})
    monkeypatch.setenv("HOLDPOINT_SLACK_API_URL", "http://127.0.0.1:9/api/")  # nothing listens
    with pytest.raises(DeliveryFailed):
        channel.deliver(RAISED, ENTRY, {})
    assert [m for m, _, _ in fake.calls] == ["chat.postMessage"]  # only the wrong token reached Slack


def test_slack_declaration_is_refused_naming_the_field() -> None:
    with pytest.raises(Refusal) as exc:
        check_declaration({**ENTRY["slack"], "bot_token": "xoxb-literal"}, "t1", "notify[1]")
    assert (exc.value.code, exc.value.param) == ("validation_error", "notify[1].slack.bot_token")
    assert "never the secret itself" in exc.value.message
    with pytest.raises(Refusal) as exc:
        check_declaration(ENTRY["slack"], "t2", "notify[0]")
    assert exc.value.param == "notify[0].slack.bot_token"
    with pytest.raises(Refusal) as exc:
        check_declaration({"channel": "#ops", "bot_token": "env:X"}, "t1", "notify[0]")
    assert exc.value.param == "notify[0].slack.signing_secret"
    check_declaration(ENTRY["slack"], "t1", "notify[0]")


@pytest.mark.parametrize(("field", "value"), [("bot_token", "xoxb-literal"), ("signing_secret", "0123abcd")])
def test_slack_declaration_refuses_a_literal_secret(field: str, value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        SlackNotify.model_validate({"slack": {**ENTRY["slack"], field: value}})
    [err] = exc.value.errors()
    assert err["loc"] == ("slack", field) and "never the secret itself" in err["msg"]


def test_slack_declaration_must_fit_in_a_button(aws: dict[str, str]) -> None:
    users = {f"U{i:010d}": f"user-{i}@example.com" for i in range(40)}
    with pytest.raises(ValidationError) as exc:
        SlackNotify.model_validate({"slack": {**ENTRY["slack"], "users": users}})
    assert "map fewer users" in str(exc.value)
    fits = {k: v for k, v in list(users.items())[:20]}
    sealed = signing.seal("slack-action", {"t": "t" * 128, "s": "s" * 64, "i": "i" * 64, "n": 24,
                                           "g": 10**15, "x": 10**10,
                                           "e": SlackNotify.model_validate({"slack": {**ENTRY["slack"], "users": fits}})
                                           .slack.model_dump(exclude_none=True)})
    assert len(sealed) <= 2000  # Slack's limit of a button's value


def test_slack_declaration_refuses_another_tenants_secret_and_unknown_fields() -> None:
    declared = SlackNotify.model_validate(ENTRY)
    declared.check("t1")
    with pytest.raises(Refusal) as exc:
        declared.check("t2")
    assert exc.value.param == "slack.bot_token" and "holdpoint/tenants/t2/" in exc.value.message
    with pytest.raises(ValidationError):
        SlackNotify.model_validate({"slack": {**ENTRY["slack"], "token": "x"}})
    with pytest.raises(ValidationError):
        SlackNotify.model_validate({"slack": {**ENTRY["slack"], "channel": "<@U1>"}})


def test_slack_posts_the_message_as_plain_text_with_options_as_buttons(fake: SlackFake) -> None:
    _, ts, sent = deliver()
    [(method, token, args)] = fake.calls
    assert (method, token, sent.channel) == ("chat.postMessage", BOT, "C0FAKE")
    assert args["channel"] == "#ops" and args["text"] == "&lt;!channel&gt; Deploy *now*?"
    section, context, actions = args["blocks"]
    assert section["text"] == {"type": "plain_text", "text": "<!channel> Deploy *now*?", "emoji": False}
    assert {"type": "mrkdwn", "text": "<https://example.test/inbox|open>"} in context["elements"]
    assert [(b["action_id"], b["text"]["text"]) for b in actions["elements"]] == [("holdpoint:0", "yes"),
                                                                                 ("holdpoint:1", "No")]
    sealed = signing.unseal("slack-action", actions["elements"][1]["value"])
    assert sealed is not None and (sealed["t"], sealed["s"], sealed["i"], sealed["n"]) == ("t1", "sess-1", "int-1", 1)
    assert BOT not in json.dumps(args) and SIGNING not in json.dumps(args)
    assert options_of({"message": "plain"}) == [  # the links' and the console's defaults (one verdict)
        {"label": "Approve", "value": {"approved": True}, "approved": True},
        {"label": "Deny", "value": {"approved": False}, "approved": False}]


def test_slack_click_with_a_valid_signature_is_the_upstream_approval_shape(fake: SlackFake) -> None:
    channel, ts, _ = deliver({"slack": {**ENTRY["slack"], "users": {"U1": "alice"}}})
    body = click_body(fake.messages[ts], ts, 1, user="U1")
    click = channel.click(body, sign(SIGNING, body)).choosing(stored())
    assert (click.tenant, click.session_id, click.interrupt_id, click.subject) == ("t1", "sess-1", "int-1", "alice")
    assert click.resume_payload() == {"status": "resolved", "payload": False, "responder": {"user": "U1"}}
    channel.show_decision(click, "2026-01-01 00:00:00 UTC")
    update = fake.calls[-1][2]
    assert fake.calls[-1][0] == "chat.update" and update["ts"] == ts
    assert update["text"] == "&lt;!channel&gt; Deploy *now*?\nNo by <@U1> at 2026-01-01 00:00:00 UTC"


def test_slack_click_without_users_acts_as_the_slack_user(fake: SlackFake) -> None:
    channel, ts, _ = deliver()
    body = click_body(fake.messages[ts], ts, 0, user="U9")
    click = channel.click(body, sign(SIGNING, body))
    assert click.subject == "slack:U9"
    with pytest.raises(Refusal) as exc:  # the interrupt was raised again with fewer options
        replace(click, option=5).choosing(stored())
    assert exc.value.code == "conflict"


def test_slack_click_refusals(fake: SlackFake) -> None:
    channel, ts, _ = deliver({"slack": {**ENTRY["slack"], "users": {"U1": "alice"}}})
    body = click_body(fake.messages[ts], ts, 0, user="U1")

    def refusal(text: str, headers: dict[str, str]) -> tuple[str, str | None]:
        with pytest.raises(Refusal) as exc:
            channel.click(text, headers)
        return exc.value.code, exc.value.param

    assert refusal(body, sign("wrong", body)) == ("unauthorized", "x-slack-signature")
    assert refusal(body, sign(SIGNING, body, timestamp=1_000_000_000)) == ("unauthorized", "x-slack-signature")
    assert refusal(body + "&x=1", sign(SIGNING, body)) == ("unauthorized", "x-slack-signature")
    other = click_body(fake.messages[ts], ts, 0, user="U2")
    assert refusal(other, sign(SIGNING, other)) == ("forbidden", "payload.user")
    payload = json.loads(parse_qs(body)["payload"][0])
    payload["actions"][0]["value"] = signing.seal("inbox-cursor", {"t": "t1"})  # sealed for another purpose
    forged = urlencode({"payload": json.dumps(payload)})
    assert refusal(forged, sign(SIGNING, forged)) == ("validation_error", "payload.actions")
    payload["type"] = "view_submission"
    other_kind = urlencode({"payload": json.dumps(payload)})
    assert refusal(other_kind, sign(SIGNING, other_kind)) == ("validation_error", "payload.type")
    assert refusal("payload=%7B", sign(SIGNING, "payload=%7B")) == ("validation_error", "payload")
    assert [m for m, _, _ in fake.calls] == ["chat.postMessage"]


def test_slack_click_whose_signing_secret_cannot_be_read_is_401(fake: SlackFake) -> None:
    gone = "secretsmanager:holdpoint/tenants/t1/gone"
    channel, ts, _ = deliver({"slack": {**ENTRY["slack"], "signing_secret": gone}})
    body = click_body(fake.messages[ts], ts, 0)
    with pytest.raises(Refusal) as exc:
        channel.click(body, sign(SIGNING, body))
    assert (exc.value.code, exc.value.param) == ("unauthorized", "x-slack-signature")


def test_slack_interactions_keep_their_form_body_as_sent() -> None:
    """The channels function skips strict JSON (Slack's body is a form) but keeps the size limits."""
    event = {"body": "payload=%7B%22a%22%3A1%7D", "isBase64Encoded": False, "headers": {}}
    assert prepare(event, json_body=False)["body"] == "payload=%7B%22a%22%3A1%7D"
    with pytest.raises(Refusal):
        prepare(event)
    with pytest.raises(Refusal) as exc:
        prepare({**event, "body": "x" * 1_048_577}, json_body=False)
    assert exc.value.code == "payload_too_large"


def test_slack_channels_function_verifies_the_body_as_sent(fake: SlackFake) -> None:
    """The channels Lambda: a wrong signature is 401; a right one over a base64-encoded form body
    (as API Gateway may send it) reaches the resume, which knows no such session (404)."""
    channels = load_handler("channels")
    _, ts, _ = deliver()
    body = click_body(fake.messages[ts], ts, 0)
    route = "POST /v1/channels/slack/interactions"
    event = http_event("POST", "/v1/channels/slack/interactions", raw_body=body, tenant=None, route_key=route)
    event["headers"].update({k.lower(): v for k, v in sign("wrong", body).items()})
    status, err = parse(channels.handler(event, CONTEXT))
    assert (status, err["error"]["code"], err["error"]["param"]) == (401, "unauthorized", "x-slack-signature")
    encoded = {**event, "body": base64.b64encode(body.encode()).decode(), "isBase64Encoded": True}
    encoded["headers"] = {**event["headers"], **{k.lower(): v for k, v in sign(SIGNING, body).items()}}
    status, err = parse(channels.handler(encoded, CONTEXT))
    assert (status, err["error"]["code"]) == (404, "not_found")
