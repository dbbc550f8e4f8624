"""The SDK's worker (sdk/src/holdpoint_sdk/worker.py): the seed scenario decided on typed triggers,
through the real engine; each decision id answered once; an answer the server would refuse is
refused before it leaves; `LATER` defers; the HTTP, Lambda, SQS and ASGI transports of one `decide`."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from pydantic import ValidationError

from holdpoint.core import signatures
from holdpoint.core.protocols.worker import InterruptResumed, ToolExecute
from holdpoint_sdk.client import Client
from holdpoint_sdk.worker import LATER, DecisionRequest, Worker, WorkerRefused
from tests.harness import Harness

pytestmark = pytest.mark.usefixtures("memory")


def typed_seed(seen: list[type]) -> Any:
    """The seed on typed triggers: ask before send_email, act on the verdict."""

    def decide(request: DecisionRequest) -> Any:
        trigger = request.trigger
        seen.append(type(trigger))
        if isinstance(trigger, ToolExecute) and trigger.name == "send_email":
            return {"actions": [{"type": "interrupt", "reason": "confirm", "payload": {"message": "Send?"}}]}
        if isinstance(trigger, InterruptResumed):
            ok = trigger.verdict == "approved"
            return {"actions": [{"type": "tool.result", "result": "sent"} if ok else
                                {"type": "tool.error", "error": "declined"}]}
        return None  # the engine's proposal

    return decide


def requests_of_the_seed() -> list[dict[str, Any]]:
    h = Harness()
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    return h.log


def test_sdk_worker_runs_the_seed_on_typed_triggers_through_the_engine() -> None:
    seen: list[type] = []
    worker = Worker(typed_seed(seen))
    h = Harness(lambda request: worker.lambda_handler(request, None))
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    assert ToolExecute in seen and InterruptResumed in seen
    tool = [m for m in h.view()["messages"] if m["role"] == "tool"]
    assert tool and "sent" in json.dumps(tool[-1])


def test_sdk_worker_answers_a_decision_once() -> None:
    calls: list[str] = []
    request = requests_of_the_seed()[0]

    def decide(req: DecisionRequest) -> Any:
        calls.append(req.decision_id)
        return {"actions": [{"type": "done"}]} if len(calls) == 1 else {"actions": []}

    worker = Worker(decide)
    first = worker.lambda_handler(request, None)
    again = worker.lambda_handler({**request, "attempts": request["attempts"] + 1}, None)  # redelivered
    assert first == again == {"actions": [{"type": "done"}]} and len(calls) == 1


def test_sdk_worker_refuses_its_own_bad_answer_before_it_leaves() -> None:
    request = requests_of_the_seed()[0]
    worker = Worker(lambda req: {"actions": [{"type": "interrupt"}]})  # no reason: the server would refuse it
    with pytest.raises(ValidationError):
        worker.lambda_handler(request, None)


def test_sdk_worker_http_checks_the_signature_and_defers_with_later() -> None:
    body = json.dumps(requests_of_the_seed()[0]).encode()
    stamp = str(int(time.time()))
    signed = {signatures.TIMESTAMP_HEADER: stamp, signatures.SIGNATURE_HEADER: signatures.sign("s", stamp, body)}
    later = Worker(lambda req: LATER, "s")
    assert later.handle(body, signed) == (202, b"")
    assert later.handle(body, {})[0] == 401
    assert later.handle(b"{}", {signatures.TIMESTAMP_HEADER: stamp,
                                signatures.SIGNATURE_HEADER: signatures.sign("s", stamp, b"{}")})[0] == 400
    with pytest.raises(WorkerRefused):
        later.lambda_handler(json.loads(body), None)  # a Lambda worker answers in its return value


class Submitted(Client):
    def __init__(self) -> None:
        super().__init__("http://holdpoint.invalid", "key")
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def submit(self, session_id: str, decision_id: str, answer: dict[str, Any]) -> dict[str, Any]:
        self.sent.append((session_id, decision_id, answer))
        return {"ok": True}


def test_sdk_worker_as_an_sqs_consumer_submits_each_answer() -> None:
    request = requests_of_the_seed()[0]
    client = Submitted()
    handler = Worker(lambda req: {"actions": [{"type": "done"}]}).sqs_handler(client)
    event = {"Records": [{"messageId": "m1", "body": json.dumps(request)}, {"messageId": "m2", "body": "not json"}]}
    assert handler(event, None) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert client.sent == [(request["session_id"], request["decision_id"], {"actions": [{"type": "done"}]})]


def test_sdk_worker_as_an_asgi_app() -> None:
    body = json.dumps(requests_of_the_seed()[0]).encode()
    worker = Worker(lambda req: {"actions": [{"type": "done"}]})
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    asyncio.run(worker.asgi({"type": "http", "headers": []}, receive, send))
    assert sent[0]["status"] == 200 and json.loads(sent[1]["body"]) == {"actions": [{"type": "done"}]}
