"""Notifications over HTTP on the local stack (docs/NOTIFICATIONS.md): the table's stream (moto's
DynamoDB Streams, read by the emulated event source mapping) drives the real notifier handler,
which publishes on the EventBridge bus of template.yaml (a rule with an SQS target, read here)
and POSTs signed webhooks; one-click links resume through the links function."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from holdpoint.aws import signing
from tests.e2e.test_approver_policies_e2e import BOARD, approver
from tests.security.probes import refusal, table_count
from tests.stack import Api, declare_agent, resumed_triggers, signed, wait_execution
from tests.waiting import wait_for

SECRET_REF = "env:HOLDPOINT_E2E_WORKER_SECRET"
JSON = {"Accept": "application/json"}


class Receiver:
    """A webhook endpoint that checks each signature and records what it got; it answers 500 to
    the first `fail` requests."""

    def __init__(self, secret: str, fail: int = 0, host: str = "127.0.0.1") -> None:
        self.secret, self.fail = secret, fail
        self.got: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = signed(receiver.secret, self.headers, body)
                with receiver.lock:
                    receiver.got.append({"body": json.loads(body), "signed": ok,
                                         "delivery": self.headers.get("X-Holdpoint-Delivery")})
                    failing = receiver.fail > 0
                    receiver.fail -= 1
                self.send_response(500 if failing or not ok else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{host}:{self.server.server_address[1]}/hook"

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [g for g in self.got if g["body"]["type"] == kind]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    yield out
    out.server.shutdown()


class BusWatch:
    """A rule on the stack's bus (every `holdpoint` event) with an SQS target: what arrived."""

    def __init__(self, stack: Any) -> None:
        self.sqs, events = stack.client("sqs"), stack.client("events")
        bus = stack.env["EVENT_BUS_NAME"]
        self.url = self.sqs.create_queue(QueueName=f"{stack.stack_name}-watch")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name=f"{stack.stack_name}-all", EventBusName=bus,
                        EventPattern=json.dumps({"source": ["holdpoint"]}))
        events.put_targets(Rule=f"{stack.stack_name}-all", EventBusName=bus, Targets=[{"Id": "watch", "Arn": arn}])
        self.seen: list[dict[str, Any]] = []

    def of(self, kind: str) -> list[dict[str, Any]]:
        for msg in self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", []):
            self.seen.append(json.loads(msg["Body"]))
            self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=msg["ReceiptHandle"])
        return [e for e in self.seen if e["detail-type"] == kind]


@pytest.fixture
def bus(stack: Any) -> BusWatch:
    return BusWatch(stack)


def notify_agent(api: Api, worker: tuple[str, list[dict[str, Any]]], url: str, **extra: Any) -> None:
    entry = {"url": url, "secret": SECRET_REF, "events": ["interrupt.raised", "interrupt.resolved"]}
    declare_agent(api, worker[0], notify=[entry], **extra)


def test_n1_raised_interrupt_reaches_the_bus_and_the_webhook_once_and_a_signed_link_resolves_it(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]], receiver: Receiver, bus: BusWatch) -> None:
    notify_agent(api, worker, receiver.url)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]

    [event] = wait_for(lambda: bus.of("interrupt.raised") or None, "the raised event on the bus")
    detail = event["detail"]
    assert event["source"] == "holdpoint"
    assert (detail["tenant"], detail["session_id"], detail["interrupt_id"], detail["reason"]) == (
        "dev", sid, iid, "confirm")
    assert detail["summary"] == '{"message":"Send the email?"}' and detail["event_id"].startswith("evt_")
    assert set(detail["links"]) == {"approve", "deny"}
    [hook] = wait_for(lambda: receiver.of("interrupt.raised") or None, "the raised webhook")
    assert hook["signed"] and hook["body"]["event_id"] == detail["event_id"]

    # GET shows the confirmation page and changes nothing (scanners and unfurlers open links).
    link = hook["body"]["links"]["approve"]
    assert link.startswith(stack.base_url + "/v1/links/")
    before, events = table_count(stack), len(api.events(sid))
    page = requests.get(link, timeout=30)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-store" and page.headers["Referrer-Policy"] == "no-referrer"
    assert 'name="confirm" value="approve"' in page.text and "Approve" in page.text
    assert requests.get(link, headers=JSON, timeout=30).json()["status"] == "open"
    assert table_count(stack) == before and len(api.events(sid)) == events
    assert api.view(sid)["status"] == "interrupted"

    # The page's button resumes, once.
    done = requests.post(link, data={"confirm": "approve"}, timeout=30)
    assert done.status_code == 200 and "recorded" in done.text
    again = requests.post(link, data={"confirm": "approve"}, headers=JSON, timeout=30)
    assert again.json()["noop"] is True
    view = api.wait_status(sid, "done")
    assert view["messages"][2]["content"] == "sent"
    assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": True}]
    [resumed] = [e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]
    assert resumed["data"]["responder"] == {"subject": "dev-user", "origin": "client"}

    # The resolved event follows the raised one in stream order: once it is in, nothing else is coming.
    [resolved] = wait_for(lambda: bus.of("interrupt.resolved") or None, "the resolved event on the bus")
    wait_for(lambda: receiver.of("interrupt.resolved") or None, "the resolved webhook")
    assert resolved["detail"]["responder"] == {"subject": "dev-user", "origin": "client"}
    assert len(bus.of("interrupt.raised")) == 1 and len(receiver.of("interrupt.raised")) == 1
    assert len(receiver.of("interrupt.resolved")) == 1
    assert "links" not in resolved["detail"]
    # The page now says it is answered and offers no button.
    assert "already been answered" in requests.get(link, timeout=30).text


def test_n2_bad_notify_declarations_are_400_naming_the_field(api: Api, stack: Any,
                                                             worker: tuple[str, list[dict[str, Any]]]) -> None:
    before = table_count(stack)
    for entry, param in [
        ({"url": "http://169.254.169.254/latest/meta-data/"}, "notify[0].url"),
        ({"url": "ftp://hooks.example.com/"}, "notify[0].url"),
        ({"url": "http://127.0.0.1:9/", "events": ["interrupt.raised", "interrupt.exploded"]}, "notify[0].events[1]"),
        ({"url": "http://127.0.0.1:9/", "secret": "hunter2"}, "notify[0].secret"),
        ({"url": "http://127.0.0.1:9/", "secret": "env:AWS_SECRET_ACCESS_KEY"}, "notify[0].secret"),
        ({"events": ["interrupt.raised"]}, "notify[0]"),
    ]:
        agent = {"worker": {"url": worker[0]}, "notify": [entry]}
        refusal(api.req("PUT", "/v1/agents/bad", agent), 400, code="validation_error", param=param)
    assert table_count(stack) == before
    assert api.req("GET", "/v1/agents/bad").status_code == 404


def test_n3_tampered_expired_and_misused_links_are_4xx_and_change_nothing(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]], receiver: Receiver) -> None:
    notify_agent(api, worker, receiver.url)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    [hook] = wait_for(lambda: receiver.of("interrupt.raised") or None, "the raised webhook")
    link = hook["body"]["links"]["deny"]
    token = link.rsplit("/", 1)[1]
    body, mac = token.split(".")
    tampered = f"{stack.base_url}/v1/links/{body[:-2] + ('A' if body[-2] != 'A' else 'B') + body[-1]}.{mac}"
    expired_claims = {"t": "dev", "s": sid, "i": interrupt["interrupt_id"], "g": 1, "o": "approve",
                      "a": "key:dev-user", "x": int(time.time()) - 5}
    expired = f"{stack.base_url}/v1/links/{signing.seal('link', expired_claims)}"
    before, events = table_count(stack), len(api.events(sid))
    for url, status, code in [(tampered, 400, "invalid_link"), (expired, 410, "link_expired"),
                              (f"{stack.base_url}/v1/links/not-a-token", 400, "invalid_link")]:
        refusal(requests.get(url, headers=JSON, timeout=30), status, code=code, param="token")
        refusal(requests.post(url, data={"confirm": "approve"}, headers=JSON, timeout=30), status, code=code,
                param="token")
        assert requests.get(url, timeout=30).status_code == status  # a person sees a page saying why
    # The real link, but not from its page: no confirm field, another option, another site.
    refusal(requests.post(link, headers=JSON, timeout=30), 400, code="validation_error", param="confirm")
    refusal(requests.post(link, data={"confirm": "approve"}, headers=JSON, timeout=30), 400, param="confirm")
    refusal(requests.post(link, data={"confirm": "deny"}, headers={**JSON, "Origin": "https://evil.example"},
                          timeout=30), 403, code="forbidden", param="origin")
    assert table_count(stack) == before and len(api.events(sid)) == events
    assert api.view(sid)["status"] == "interrupted"


def dead_letters(stack: Any, what: str) -> list[dict[str, Any]]:
    """Waits for messages on the notification DLQ and returns their bodies."""
    sqs = stack.client("sqs")

    def dead() -> list[dict[str, Any]] | None:
        got = sqs.receive_message(QueueUrl=stack.env["NOTIFY_DLQ_URL"], MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in got] or None

    return wait_for(dead, what)


def test_n4_a_failing_webhook_is_retried_on_durable_timers_then_dead_lettered(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]], receiver: Receiver) -> None:
    receiver.fail = 100
    notify_agent(api, worker, receiver.url, retry={"webhook": {"max_attempts": 2, "backoff_base_secs": 1}})
    sid = api.start()
    api.wait_status(sid, "interrupted")
    [letter] = dead_letters(stack, "the dead-lettered webhook delivery")
    attempts = receiver.of("interrupt.raised")
    assert letter["kind"] == "notify.dead" and letter["attempts"] == 2 and "HTTP 500" in letter["error"]
    assert len(attempts) == 2 and len({a["delivery"] for a in attempts}) == 1  # one delivery, two attempts
    assert letter["event"]["event_id"] == attempts[0]["body"]["event_id"]


def test_n5_the_link_page_escapes_what_the_interrupt_says(api: Api, stack: Any, bus: BusWatch) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": hostile, "payload": {"note": hostile}})
    [event] = wait_for(lambda: bus.of("interrupt.raised") or None, "the raised event on the bus")
    page = requests.get(event["detail"]["links"]["approve"], timeout=30)
    assert page.status_code == 200
    assert "<script>" not in page.text and "<img" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def test_n6_a_record_the_notifier_cannot_publish_is_retried_then_dead_lettered(api: Api, stack: Any) -> None:
    stack.client("events").delete_event_bus(Name=stack.env["EVENT_BUS_NAME"])  # every PutEvents now fails
    sid = api.start()
    api.wait_status(sid, "interrupted")
    [letter] = dead_letters(stack, "the stream batch on the notification DLQ")
    info = letter["DDBStreamBatchInfo"]
    assert letter["requestContext"]["condition"] == "RetryAttemptsExhausted"
    # The failed record, and at most the two changes parking then makes to the open interrupt item
    # (the execution's name, then its task token): the notifier reads those too, for answers, and
    # they come after the failed record in the stream, in its batch or not as the reader's timing goes.
    assert info["batchSize"] in (1, 2, 3)
    assert api.view(sid)["status"] == "interrupted"  # the session never waits on its notifications


def test_n7_an_answer_short_of_the_quorum_reaches_the_bus_and_the_webhook_once(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]], receiver: Receiver, bus: BusWatch) -> None:
    entry = {"url": receiver.url, "secret": SECRET_REF, "events": ["interrupt.answered", "interrupt.resolved"]}
    declare_agent(api, worker[0], notify=[entry], approval=BOARD)
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")
    assert ann.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume",
                   {"payload": {"approved": True}, "comment": "checked"}).json()["status"] == "open"
    [event] = wait_for(lambda: bus.of("interrupt.answered") or None, "the recorded answer on the bus")
    detail = event["detail"]
    assert (detail["session_id"], detail["interrupt_id"], detail["answers"], detail["quorum"]) == (sid, iid, 1, 2)
    assert detail["answer"] == {"subject": "ann", "origin": "operator", "status": "approved", "comment": "checked"}
    [hook] = wait_for(lambda: receiver.of("interrupt.answered") or None, "the recorded answer's webhook")
    assert hook["signed"] and hook["body"]["event_id"] == detail["event_id"]
    assert bob.resume(sid, iid, {"approved": True}).json()["noop"] is False
    api.wait_status(sid, "done")
    # The resolution is published after the answer in stream order: once it is in, nothing else is coming.
    wait_for(lambda: receiver.of("interrupt.resolved") or None, "the resolved webhook")
    assert len(bus.of("interrupt.answered")) == 1 and len(receiver.of("interrupt.answered")) == 1
