"""Approvals by email, end to end on the local stack: an agent whose `notify` entry emails a team
parks a turn; the notifier (with its own role, which may send only from the stack's SES identity)
sends the message through SES v2 on the moto server; the test reads what moto's SES kept (the
moto server's `/moto-api/data.json`, its supported view of the models it holds), follows the
message's approve link in Chromium, presses the confirmation page's button, and the worker gets
exactly one `interrupt.resumed` with the approval.

The message itself (escaping, the Subject, the bounds) is tests/unit/test_email_channel.py's and
tests/security/test_email_channel_attacks.py's."""

from __future__ import annotations

import re
import uuid
from html import unescape
from typing import Any

import requests
from playwright.sync_api import Browser, expect

from holdpoint_local.faults import Faults
from holdpoint_local.stack import DEFAULT_TENANT, EMAIL_SENDER
from tests.chaos.test_chaos import chaos_stack, faults  # the fault injector, installed before the stack's clients
from tests.stack import Api, resumed_triggers, seed_worker, wait_execution, worker_answering
from tests.waiting import wait_for

WAIT_MS = 30_000


def seed(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The seed worker's answers (it asks before send_email, and sends once approved)."""
    return seed_worker.decide(trigger, proposed)


def sent_to(stack: Any, address: str) -> list[dict[str, Any]]:
    """The messages moto's SES holds for `address` (every test shares the moto server)."""
    got = requests.get(f"{stack.moto_endpoint}/moto-api/data.json?service=ses", timeout=30)
    assert got.status_code == 200, (got.status_code, got.text[:2000])
    models = got.json()
    messages = models.get("ses", {}).get("Message", [])
    return [m for m in messages if address in (m.get("destinations") or {}).get("ToAddresses", [])]


def deliveries(stack: Any, sid: str) -> list[dict[str, Any]]:
    """The session's delivery records (what a failure to send left), for a timeout's message."""
    from holdpoint.aws.store import session_pk

    items = stack.client("dynamodb").query(
        TableName=stack.env["TABLE_NAME"], KeyConditionExpression="PK = :p AND begins_with(SK, :d)",
        ExpressionAttributeValues={":p": {"S": session_pk(DEFAULT_TENANT, sid)}, ":d": {"S": "D#"}})["Items"]
    return [{k: v for k, v in item.items() if k in ("SK", "status", "last_error", "attempt")} for item in items]


def test_email_channel_approve_link_followed_in_chromium_reaches_the_worker(
        api: Api, stack: Any, browser: Browser) -> None:
    team = [f"ann.{uuid.uuid4().hex[:10]}@example.com", "bob@example.com"]

    with worker_answering(api, seed, notify=[{"email": {"to": team}, "events": ["interrupt.raised"]}]) as seen:
        sid = api.start()
        [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
        iid = interrupt["interrupt_id"]
        wait_execution(stack, sid, iid, "RUNNING")
        [message] = wait_for(lambda: sent_to(stack, team[0]) or None, "the email in moto's SES", 60,
                             describe=lambda: deliveries(stack, sid))
        assert message["source"] == EMAIL_SENDER
        assert message["destinations"]["ToAddresses"] == team
        assert message["subject"].startswith("Approval needed: ")
        html = message["body"]
        assert "send_email" in html and "Who may answer:" in html
        [approve] = [unescape(u) for u in re.findall(r'<a href="([^"]+)">Approve</a>', html)]
        assert approve.startswith(f"{stack.base_url}/v1/links/")
        assert f"Approve: {approve}\n" in message["text"]  # the plain text part: the same link

        page = browser.new_page()
        try:
            page.goto(approve)
            expect(page.locator("button[type=submit]")).to_have_text("Approve", timeout=WAIT_MS)
            assert api.view(sid)["status"] == "interrupted"  # opening the link changed nothing
            page.locator("button[type=submit]").click()
            view = api.wait_status(sid, "done")
        finally:
            page.close()
        assert view["messages"][2]["content"] == "sent"
        wait_execution(stack, sid, iid, "SUCCEEDED")
        [resumed] = resumed_triggers(seen, sid)
        assert resumed["payload"] == {"approved": True}
        assert len(sent_to(stack, team[0])) == 1  # one message for the one raise


def test_email_channel_a_bad_declaration_is_a_400_naming_the_address_and_records_nothing(
        api: Api, stack: Any) -> None:
    bad = {"notify": [{"email": {"to": ["ann@example.com", "bob@example.com\r\nBcc: eve@evil.example"]}}]}
    answer = api.req("PUT", "/v1/agents/mailer", bad)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "validation_error"
    assert answer.json()["error"]["param"] == "notify[0].email.to[1]"
    assert api.req("GET", "/v1/agents/mailer").status_code == 404  # nothing was recorded


__all__ = ["chaos_stack", "faults"]


def test_email_channel_a_throttled_send_is_retried_by_the_engine_through_the_outbox(
        chaos_stack: Any, faults: Faults) -> None:
    """SES throttles the notifier's attempt past botocore's three: the delivery waits `retrying` on a
    durable timer, and the engine's retry (with the engine's own role) sends the message once."""
    stack, api = chaos_stack, Api(chaos_stack.base_url, chaos_stack.api_key)
    throttle = faults.inject("sesv2", "SendEmail", "TooManyRequestsException", function="NotifierFunction", first=3)
    team = [f"cid.{uuid.uuid4().hex[:10]}@example.com"]
    with worker_answering(api, seed, notify=[{"email": {"to": team}, "events": ["interrupt.raised"]}],
                          retry={"webhook": {"max_attempts": 3, "backoff_base_secs": 1}}) as seen:
        sid = api.start()
        api.wait_status(sid, "interrupted")
        [message] = wait_for(lambda: sent_to(stack, team[0]) or None, "the retried email in moto's SES", 60,
                             describe=lambda: deliveries(stack, sid))
        assert throttle.fired == 3
        assert faults.sites[("NotifierFunction", "sesv2", "SendEmail")] == 3
        assert faults.sites[("EngineFunction", "sesv2", "SendEmail")] == 1
        [record] = deliveries(stack, sid)
        assert record["status"] == {"S": "delivered"} and record["attempt"] == {"N": "2"}
        [approve] = [unescape(u) for u in re.findall(r'<a href="([^"]+)">Approve</a>', message["body"])]
        assert requests.post(approve, data={"confirm": "approve"}, timeout=30).status_code == 200
        api.wait_status(sid, "done")
        assert [t["payload"] for t in resumed_triggers(seen, sid)] == [{"approved": True}]
        assert len(sent_to(stack, team[0])) == 1
