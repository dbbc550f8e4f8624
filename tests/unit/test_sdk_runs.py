"""The SDK's side of external runs (sdk/src/holdpoint_sdk/runs.py): what it sends is checked with
the server's own model before it leaves; a delivery is read with the server's model, a signed
one only when its signature verifies; each delivery id is handed to its handler once, across
processes too, and a handler that fails gives it back for Holdpoint's retry; an answer approves
only when its verdict is `approved`."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from holdpoint.core import signatures
from holdpoint_sdk import runs
from holdpoint_sdk.client import Client

DELIVERY = {"delivery_id": "dlv_0123456789abcdef01234567", "type": "run.answers", "tenant": "t1",
            "agent_id": "a", "run_id": "r1", "session_id": "ses_1",
            "answers": [{"interrupt_id": "i1", "reason": "approval", "payload": {"approved": True},
                         "verdict": "approved", "responder": {"subject": "ann", "origin": "operator"},
                         "channel": "slack", "expired": False, "approvals": []}],
            "state": {"thread": "t-1"}}


class Recorder(Client):
    def __init__(self) -> None:
        super().__init__("http://holdpoint.invalid", "key")
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def raise_run(self, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append((run_id, body))
        return {"run_id": run_id}


def test_sdk_ask_sends_what_the_server_checks_and_refuses_the_rest_before_sending() -> None:
    client = Recorder()
    runs.ask(client, "r1", "a", [runs.Ask("i1", "Pay invoice 7?", tool="pay", arguments={"n": 7}, expires_in=60)],
             target="hook", state={"k": 1})
    [(run_id, body)] = client.sent
    assert run_id == "r1" and body["interrupts"][0] == {
        "interrupt_id": "i1", "reason": "approval", "payload": {"message": "Pay invoice 7?"},
        "action": {"tool": "pay", "arguments": {"n": 7}}, "expires_in": 60}
    with pytest.raises(ValidationError):
        runs.ask(client, "r1", "a", [runs.Ask("i1", "x", expires_in=0)])
    assert len(client.sent) == 1


@pytest.mark.parametrize("verdict", ["denied", "cancelled", "answered"])
def test_sdk_only_an_approved_verdict_approves(verdict: str) -> None:
    answer = runs.delivery({**DELIVERY, "answers": [{**DELIVERY["answers"][0], "verdict": verdict}]}).answers[0]
    assert not answer.approved
    assert runs.refusal(answer).startswith("not approved")
    assert runs.refusal(None).startswith("not approved")


def test_sdk_a_signed_delivery_is_read_only_when_its_signature_verifies() -> None:
    body = json.dumps(DELIVERY).encode()
    now = time.time()
    stamp = str(int(now))
    good = {signatures.TIMESTAMP_HEADER: stamp, signatures.SIGNATURE_HEADER: signatures.sign("s3cret", stamp, body)}
    assert runs.verified(body, good, "s3cret", now).run_id == "r1"
    forged = {**good, signatures.SIGNATURE_HEADER: "sha256=00"}
    for headers, secret, at in [(good, "other", now), (good, "s3cret", now + 3600), (forged, "s3cret", now),
                                ({}, "s3cret", now)]:
        with pytest.raises(runs.DeliveryRefused):
            runs.verified(body, headers, secret, at)
    with pytest.raises(runs.DeliveryRefused):
        runs.verified(body.replace(b"approved", b"denied!!"), good, "s3cret", now)


def test_sdk_each_delivery_is_handled_once_and_a_failed_handler_gives_it_back(tmp_path: Path) -> None:
    handled: list[str] = []
    fail = [True]

    def handle(one: runs.RunDelivery) -> None:
        if fail[0]:
            fail[0] = False
            raise RuntimeError("the framework failed")
        handled.append(one.delivery_id)

    first = runs.Deliveries(handle, runs.FileSeen(tmp_path))
    one = runs.delivery(DELIVERY)
    with pytest.raises(RuntimeError):
        first.take(one)
    assert first.take(one) is True  # the retry is taken
    other_process = runs.Deliveries(handle, runs.FileSeen(tmp_path))
    assert other_process.take(one) is False  # a repeat, in another process too
    assert handled == [one.delivery_id]


def test_sdk_a_delivery_id_not_of_holdpoints_shape_is_refused(tmp_path: Path) -> None:
    with pytest.raises(runs.DeliveryRefused):
        runs.FileSeen(tmp_path).claim("../../etc/passwd")


def test_sdk_sqs_handler_reports_only_the_failed_record() -> None:
    taken: list[str] = []
    handler = runs.Deliveries(lambda one: taken.append(one.run_id)).sqs_handler()
    event = {"Records": [{"messageId": "m1", "body": json.dumps(DELIVERY)}, {"messageId": "m2", "body": "{}"}]}
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}  # m1 again: a repeat
    assert taken == ["r1"]


def test_sdk_receiver_answers_by_what_it_got() -> None:
    taken: list[str] = []
    server = runs.Deliveries(lambda one: taken.append(one.delivery_id)).serve("s3cret")
    url = f"http://127.0.0.1:{server.server_address[1]}/"

    def post(body: bytes, secret: str) -> int:
        stamp = str(int(time.time()))
        request = urllib.request.Request(url, data=body, method="POST", headers={
            signatures.TIMESTAMP_HEADER: stamp, signatures.SIGNATURE_HEADER: signatures.sign(secret, stamp, body)})
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        body = json.dumps(DELIVERY).encode()
        assert [post(body, "s3cret"), post(body, "s3cret"), post(body, "wrong"), post(b"{}", "s3cret")] == [
            204, 204, 401, 400]
    finally:
        server.shutdown()
    assert taken == [DELIVERY["delivery_id"]]


def test_sdk_a_refusal_says_who_refused_and_their_comment() -> None:
    answer = runs.delivery({**DELIVERY, "answers": [{**DELIVERY["answers"][0], "verdict": "denied",
                                                      "responder": {"subject": "ann"},
                                                      "payload": {"approved": False, "comment": "not today"}}]})
    assert runs.refusal(answer.answers[0]) == "not approved: denied by ann (not today)"
