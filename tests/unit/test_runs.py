"""External runs (PROTOCOL.md §10), in process on moto's AWS with the real engine, store and
notifier: a run raises interrupts in a session of its own, parked and answered like any other, and
their answers reach the target the agent declares (an SQS queue here; a signed URL in
tests/e2e/test_runs_e2e.py, a Step Functions task token in test_step_functions_wait_e2e.py), once
per interrupt or all together, each under a stable delivery id, with the run's state Holdpoint held."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
import pytest

from holdpoint.aws import signing
from holdpoint.aws.deliveries import DeliveryLog
from holdpoint.aws.events import EventBus
from holdpoint.aws.outbox import events as outbox_events
from holdpoint.aws.timers import Timers
from holdpoint.bridges.runs import channels as run_channels
from holdpoint.bridges.runs import service as runs
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.client import RunInterruptsBody
from holdpoint.notify.service import Notifier
from holdpoint.services.caller import Caller
from holdpoint.services.resume import resume
from holdpoint_sdk import runs as sdk_runs
from tests.harness import Harness
from tests.unit.test_api import call_api
from tests.unit.test_notify import bus, stream_batch

__all__ = ["bus"]
pytestmark = pytest.mark.usefixtures("aws")

ANN = Caller("t1", "ann", "operator")


@pytest.fixture
def queue(bus: str, monkeypatch: pytest.MonkeyPatch) -> str:
    url = boto3.client("sqs").create_queue(QueueName="run-answers")["QueueUrl"]
    monkeypatch.setenv("TENANT_QUEUE_ALLOWLIST", "arn:aws:sqs:us-east-1:123456789012:run-*")
    monkeypatch.setenv("HOLDPOINT_ACCOUNT_ID", "123456789012")  # the template gives every function its account
    return str(url)


def harness(queue: str, **agent: Any) -> Harness:
    return Harness(agent={"run_targets": {"answers": {"queue": queue}}, **agent})


def body(**fields: Any) -> RunInterruptsBody:
    asked = [{"interrupt_id": "send-1", "reason": "approve", "payload": {"message": "Send it?"},
              "action": {"tool": "send_email", "arguments": {"to": "bob"}}}]
    return RunInterruptsBody.model_validate({"agent_id": "assistant", "target": "answers",
                                             "interrupts": asked, **fields})


def raised(h: Harness, run_id: str, raise_body: RunInterruptsBody, caller: Caller | None = None) -> dict[str, Any]:
    out = runs.raise_run(h.store, h.queue, caller or h.caller, run_id, raise_body)
    h.session_id = out["session_id"]
    h.settle()  # the engine parks each raise
    return out


def deliver(h: Harness) -> Notifier:
    """The notifier (its run channels on moto), handed the session's closing events as the stream does."""
    n = Notifier(h.store, EventBus(), DeliveryLog(), Timers(), signing, run_channels.channels(),
                 pushes=runs.RunDeliveries(h.store).starts)
    for item in outbox_events(stream_batch(h, "session.interrupt_resumed"), h.store):
        n.on_event(item.tenant, item.session_id, item.event)
    return n


def received(queue: str) -> list[dict[str, Any]]:
    got = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in got]


def test_external_run_raises_parks_and_delivers_its_answer_to_the_declared_queue(queue: str) -> None:
    h = harness(queue)
    out = raised(h, "run-1", body(state={"step": 3}))
    [item] = out["interrupts"]
    assert (item["interrupt_id"], item["status"], item["action"]["tool"]) == ("send-1", "open", "send_email")
    assert item["action"]["arguments"] == '{"to":"bob"}' and len(item["action"]["fingerprint"]) == 64  # A3
    assert h.record("send-1") is not None  # parked with a task token, as any interrupt
    resume(h.store, h.parking, ANN, h.session_id or "", "send-1", {"approved": True}, channel="api")
    h.wake("send-1", "resumed")
    deliver(h)
    [delivery] = received(queue)
    assert (delivery["type"], delivery["run_id"], delivery["state"]) == ("run.answers", "run-1", {"step": 3})
    [answer] = delivery["answers"]
    assert (answer["interrupt_id"], answer["payload"], answer["verdict"]) == ("send-1", {"approved": True}, "approved")
    assert answer["responder"] == {"subject": "ann", "origin": "operator"}
    assert delivery["delivery_id"].startswith("dlv_")
    read = sdk_runs.delivery(json.dumps(delivery))  # what the SDK reads is what the server built
    assert read.answer("send-1") is not None and read.answers[0].approved


def test_external_run_delivers_once_however_often_the_stream_repeats(queue: str) -> None:
    h = harness(queue)
    raised(h, "run-dup", body())
    resume(h.store, h.parking, ANN, h.session_id or "", "send-1", {"approved": False})
    h.wake("send-1", "resumed")
    deliver(h)
    deliver(h)  # the stream delivers the record again: the delivery was claimed once
    [delivery] = received(queue)
    assert delivery["answers"][0]["verdict"] == "denied"
    assert received(queue) == []


def test_external_run_all_together_waits_for_the_whole_batch(queue: str) -> None:
    h = harness(queue)
    two = [{"interrupt_id": f"tool-{i}", "reason": "approve", "payload": {"message": f"Call {i}?"}} for i in (1, 2)]
    raised(h, "run-all", body(deliver="all", interrupts=two, state={"thread": "t-1"}))
    resume(h.store, h.parking, ANN, h.session_id or "", "tool-1", {"approved": True})
    h.wake("tool-1", "resumed")
    deliver(h)
    assert received(queue) == []  # one of two: nothing yet
    resume(h.store, h.parking, ANN, h.session_id or "", "tool-2", {"approved": False})
    h.wake("tool-2", "resumed")
    deliver(h)
    [delivery] = received(queue)
    assert [(a["interrupt_id"], a["verdict"]) for a in delivery["answers"]] == [("tool-1", "approved"),
                                                                               ("tool-2", "denied")]
    assert delivery["state"] == {"thread": "t-1"}


def test_external_run_a_retried_raise_raises_nothing_twice(queue: str) -> None:
    h = harness(queue)
    first = raised(h, "run-retry", body())
    again = raised(h, "run-retry", body())
    assert first["session_id"] == again["session_id"]
    assert len([e for e in h.events() if e["type"] == "session.interrupted"]) == 1


def test_external_run_id_is_the_callers_own(queue: str) -> None:
    """The same run id from another principal is another run (its own session), never this one."""
    h = harness(queue)
    mine = raised(h, "run-x", body())
    theirs = runs.raise_run(h.store, h.queue, Caller("t1", "mallory", "client", own_only=True), "run-x", body())
    assert theirs["session_id"] != mine["session_id"]
    with pytest.raises(Refusal) as refused:
        runs.view(h.store, Caller("t1", "mallory", "client", own_only=True), "run-unknown")
    assert refused.value.code == "not_found"


def test_external_run_with_no_target_reads_its_own_answers(queue: str) -> None:
    """No target: nothing is delivered anywhere; the run's own reads show the answer and verdict."""
    h = harness(queue)
    raised(h, "run-self", body(target=None))
    resume(h.store, h.parking, ANN, h.session_id or "", "send-1", {"approved": False}, channel="api")
    h.wake("send-1", "resumed")
    deliver(h)
    assert received(queue) == []
    [item] = runs.view(h.store, h.caller, "run-self")["interrupts"]
    assert (item["status"], item["verdict"], item["payload"]) == ("resolved", "denied", {"approved": False})


def test_external_run_id_names_one_agent(queue: str) -> None:
    """A run id the caller used with one agent is not silently reused by another (409 naming it)."""
    h = harness(queue)
    raised(h, "run-one", body())
    h.store.put_agent("t1", "other", {"run_targets": {"answers": {"queue": queue}}})
    with pytest.raises(Refusal) as refused:
        runs.raise_run(h.store, h.queue, h.caller, "run-one", body(agent_id="other"))
    assert (refused.value.code, refused.value.param) == ("conflict", "run_id")


@pytest.mark.parametrize(("change", "param"), [
    ({"target": "nowhere"}, "target"),
    ({"target": "sfn"}, "callback.task_token"),
    ({"target": None, "callback": {"task_token": "tok"}}, "target"),
    ({"target": "sfn", "deliver": "each", "callback": {"task_token": "tok"}}, "deliver"),
    ({"state": {"blob": "x" * 140_000}}, "state"),
])
def test_external_run_a_bad_raise_names_the_field_and_records_nothing(queue: str, change: dict[str, Any],
                                                                      param: str) -> None:
    h = harness(queue, run_targets={"answers": {"queue": queue}, "sfn": {"step_functions": True}})
    with pytest.raises(Refusal) as refused:
        runs.raise_run(h.store, h.queue, h.caller, "run-bad", body(**change))
    assert refused.value.param == param
    with pytest.raises(Refusal):
        runs.view(h.store, h.caller, "run-bad")


@pytest.mark.parametrize(("target", "param"), [
    ({"queue": "https://sqs.us-east-1.amazonaws.com/123456789012/other"}, "run_targets.t.queue"),
    ({"queue": "https://sqs.us-east-1.amazonaws.com/999999999999/run-x"}, "run_targets.t.queue"),
    ({"lambda": "arn:aws:lambda:us-east-1:123456789012:function:anything"}, "run_targets.t.lambda"),
    ({"url": "http://169.254.169.254/latest"}, "run_targets.t.url"),
    ({"url": "https://hooks.example.com/x", "secret": "plain-secret"}, "run_targets.t.secret"),
    ({"queue": "https://sqs.us-east-1.amazonaws.com/123456789012/run-x", "step_functions": True}, "run_targets.t"),
])
def test_external_run_targets_are_checked_where_declared(queue: str, target: dict[str, Any], param: str) -> None:
    assert os.environ["TENANT_QUEUE_ALLOWLIST"]
    status, out = call_api("PUT", "/v1/agents/runner", {"run_targets": {"t": target}})
    assert status == 400 and out["error"]["param"].startswith(param), out


def test_external_run_receipt_travels_with_the_delivered_answer(queue: str) -> None:
    """The receipt the wake signed is on the run's delivered answer, and checks offline against the
    action the run declared."""
    from holdpoint_local.memory.receipts import MemoryReceiptKeys
    from holdpoint_sdk.receipts import verify_receipt

    h = harness(queue)
    keys = MemoryReceiptKeys()
    h.runner.receipts = keys
    raised(h, "run-r", body())
    resume(h.store, h.parking, ANN, h.session_id or "", "send-1", {"approved": True}, channel="api")
    h.wake("send-1", "resumed")
    deliver(h)
    [delivery] = received(queue)
    [answer] = delivery["answers"]
    claims = verify_receipt(answer["receipt"], {"tool": "send_email", "arguments": {"to": "bob"}}, keys.jwks())
    assert (claims["interrupt"], claims["verdict"]) == ("send-1", "approved")
    assert sdk_runs.delivery(json.dumps(delivery)).answers[0].receipt == answer["receipt"]
