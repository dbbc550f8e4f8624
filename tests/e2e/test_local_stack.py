"""The local stack's API Gateway and SQS emulation, exercised with throwaway handlers (not the real
ones), so it is checked independently of the engine."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from holdpoint import assembly
from holdpoint_local.emulators.runtime import LocalFunction
from holdpoint_local.stack import LocalStack
from tests.waiting import wait_quiet

AUTHORIZER = '''
def handler(event, context):
    token = event["identitySource"][0]
    if token == "Bearer boom":
        raise RuntimeError("authorizer bug")
    ok = token == "Bearer good"
    return {"isAuthorized": ok, "context": {"tenant": "dev", "subject": "dev-user", "origin": "client"}}
'''

API = '''
import json, os
import boto3

LOADED_AS = __name__

def handler(event, context):
    if event["routeKey"] == "POST /v1/sessions":
        sqs = boto3.client("sqs")  # AWS_ENDPOINT_URL points it at moto
        body = json.loads(event["body"])
        sqs.send_message(
            QueueUrl=os.environ["WORK_QUEUE_URL"],
            MessageBody=json.dumps({"kind": "kick", "tenant": "dev", "session_id": body["session_id"]}),
            MessageGroupId=body["session_id"],
            MessageDeduplicationId=body["session_id"] + "-1",
        )
        return {"statusCode": 202, "headers": {"content-type": "application/json"},
                "body": json.dumps({"session_id": body["session_id"]})}
    if event["rawPath"] == "/v1/agents/crash":
        raise ValueError("handler bug")
    return {"statusCode": 200, "headers": {"content-type": "application/json", "x-module": LOADED_AS},
            "body": json.dumps({"event": event, "fn": context.function_name,
                                "remaining": context.get_remaining_time_in_millis()})}
'''

RESUME = '''
def handler(event, context):
    return {"ok": True, "interrupt_id": event["pathParameters"]["interrupt_id"], "noop": False}
'''


def write_functions(root: Path) -> Path:
    for name, code in {"authorizer": AUTHORIZER, "api": API, "resume": RESUME, "engine": "handler = None\n"}.items():
        d = root / "functions" / name
        d.mkdir(parents=True)
        (d / "app.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root


class Engine:
    """Records SQS batches; fails a record whose body says so, until it has been received `fail_times`."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.got = threading.Condition()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        failures = []
        for rec in event["Records"]:
            body = json.loads(rec["body"])
            if body.get("fail_until", 0) >= int(rec["attributes"]["ApproximateReceiveCount"]):
                failures.append({"itemIdentifier": rec["messageId"]})
        with self.got:
            self.events.append(event)
            self.records.extend(event["Records"])
            self.got.notify_all()
        return {"batchItemFailures": failures}

    def wait_for(self, pred: Callable[[list[dict[str, Any]]], bool], timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        with self.got:
            while not pred(self.records):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; records so far: {[r['body'] for r in self.records]}"
                self.got.wait(left)


@pytest.fixture
def engine() -> Engine:
    return Engine()


@pytest.fixture
def stack(
    local_stack_factory: Callable[..., LocalStack], tmp_path: Path, engine: Engine
) -> LocalStack:
    return local_stack_factory(
        code_root=write_functions(tmp_path), handlers={"EngineFunction": engine}, seed_api_key=False
    )


GOOD = {"Authorization": "Bearer good"}


def test_auth_like_api_gateway(stack: LocalStack) -> None:
    url = stack.base_url
    r = requests.get(f"{url}/v1/sessions/s-1", timeout=10)
    assert (r.status_code, r.json()) == (401, {"message": "Unauthorized"})
    r = requests.get(f"{url}/v1/sessions/s-1", headers={"Authorization": "Bearer bad"}, timeout=10)
    assert (r.status_code, r.json()) == (403, {"message": "Forbidden"})
    r = requests.get(f"{url}/v1/sessions/s-1", headers={"Authorization": "Bearer boom"}, timeout=10)
    assert r.status_code == 500
    r = requests.get(f"{url}/v1/nope", headers=GOOD, timeout=10)
    assert (r.status_code, r.json()) == (404, {"message": "Not Found"})
    r = requests.delete(f"{url}/v1/sessions/s-1", headers=GOOD, timeout=10)
    assert r.status_code == 404
    r = requests.get(f"{url}/v1/openapi.json", timeout=10)  # Auth: NONE route
    assert r.status_code == 200
    assert "authorizer" not in r.json()["event"]["requestContext"]


def test_http_api_v2_event_shape(stack: LocalStack) -> None:
    r = requests.get(
        f"{stack.base_url}/v1/sessions/s%201/events?after_seq=3&x=a&x=b",
        headers={**GOOD, "X-Custom": "Yes"},
        timeout=10,
    )
    assert r.status_code == 200
    out = r.json()
    ev = out["event"]
    assert ev["version"] == "2.0"
    assert ev["routeKey"] == "GET /v1/sessions/{session_id}/events"
    assert ev["rawPath"] == "/v1/sessions/s%201/events"
    assert ev["rawQueryString"] == "after_seq=3&x=a&x=b"
    assert ev["queryStringParameters"] == {"after_seq": "3", "x": "a,b"}
    assert ev["pathParameters"] == {"session_id": "s 1"}
    assert ev["headers"]["x-custom"] == "Yes" and ev["headers"]["authorization"] == "Bearer good"
    assert ev["isBase64Encoded"] is False and "body" not in ev
    ctx = ev["requestContext"]
    assert ctx["authorizer"] == {"lambda": {"tenant": "dev", "subject": "dev-user", "origin": "client"}}
    assert ctx["http"]["method"] == "GET" and ctx["http"]["path"] == ev["rawPath"]
    assert ctx["stage"] == "$default" and ctx["routeKey"] == ev["routeKey"]
    assert isinstance(ctx["timeEpoch"], int) and ctx["requestId"]
    assert out["fn"] == "ApiFunction" and 0 < out["remaining"] <= 29_000
    # the payload-2.0 event parses with Powertools' own data class
    from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

    parsed = APIGatewayProxyEventV2(ev)
    assert parsed.request_context.authorizer.get_lambda["tenant"] == "dev"
    assert parsed.path_parameters == {"session_id": "s 1"}


def test_responses_and_errors(stack: LocalStack) -> None:
    r = requests.post(
        f"{stack.base_url}/v1/sessions/s-1/interrupts/int-9/resume", json={"payload": {}}, headers=GOOD, timeout=10
    )
    assert (r.status_code, r.json()) == (200, {"ok": True, "interrupt_id": "int-9", "noop": False})
    r = requests.get(f"{stack.base_url}/v1/agents/crash", headers=GOOD, timeout=10)
    assert (r.status_code, r.json()) == (500, {"message": "Internal Server Error"})


def test_api_to_queue_to_engine(stack: LocalStack, engine: Engine) -> None:
    r = requests.post(f"{stack.base_url}/v1/sessions", json={"session_id": "s-42"}, headers=GOOD, timeout=10)
    assert r.status_code == 202
    engine.wait_for(lambda recs: any(json.loads(x["body"])["session_id"] == "s-42" for x in recs))
    rec = engine.records[-1]
    assert json.loads(rec["body"]) == {"kind": "kick", "tenant": "dev", "session_id": "s-42"}
    assert rec["eventSource"] == "aws:sqs"
    assert rec["eventSourceARN"].endswith(":" + stack.env["WORK_QUEUE_URL"].rsplit("/", 1)[-1])
    assert rec["attributes"]["MessageGroupId"] == "s-42"
    assert rec["attributes"]["MessageDeduplicationId"] == "s-42-1"
    for key in ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
                "SequenceNumber"):  # fmt: skip
        assert key in rec["attributes"]
    assert rec["md5OfBody"] and rec["awsRegion"] == "us-east-1"
    from aws_lambda_powertools.utilities.data_classes import SQSEvent

    assert next(iter(SQSEvent(engine.events[-1]).records)).attributes.message_group_id == "s-42"


def test_partial_batch_failure_is_redelivered_then_deleted(stack: LocalStack, engine: Engine) -> None:
    sqs = stack.client("sqs")
    url = stack.env["WORK_QUEUE_URL"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": 1, "fail_until": 2}),
                     MessageGroupId="g1", MessageDeduplicationId="d1")  # fmt: skip
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"n": 2}), MessageGroupId="g2", MessageDeduplicationId="d2")
    engine.wait_for(
        lambda recs: any(json.loads(r["body"]).get("n") == 1 and r["attributes"]["ApproximateReceiveCount"] == "3"
                         for r in recs)  # fmt: skip
    )
    assert sum(1 for r in engine.records if json.loads(r["body"]).get("n") == 2) == 1
    wait_quiet(stack)  # deleted once it succeeded: nothing comes back
    assert sum(1 for r in engine.records if json.loads(r["body"]).get("n") == 1) == 3
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_restart_keeps_aws_state(
    local_stack_factory: Callable[..., LocalStack], tmp_path: Path, engine: Engine, stack_name: str
) -> None:
    root = write_functions(tmp_path)
    first = local_stack_factory(code_root=root, handlers={"EngineFunction": engine}, seed_api_key=False)
    env = dict(first.env)
    first.stop(keep_moto=True)
    # work that arrives while every "Lambda" is down waits in the queue
    first.client("sqs").send_message(QueueUrl=env["WORK_QUEUE_URL"], MessageBody=json.dumps({"n": 7}),
                                     MessageGroupId="g7", MessageDeduplicationId="d7")  # fmt: skip
    second = local_stack_factory(code_root=root, handlers={"EngineFunction": engine}, seed_api_key=False)
    assert second.env == env
    engine.wait_for(lambda recs: any(json.loads(r["body"]).get("n") == 7 for r in recs))
    assert stack_name in env["TABLE_NAME"]


def test_concurrent_requests_use_separate_module_instances(stack: LocalStack) -> None:
    results: list[requests.Response] = []

    def call() -> None:
        results.append(requests.get(f"{stack.base_url}/v1/agents/a1", headers=GOOD, timeout=20))

    threads = [threading.Thread(target=call) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in results] == [200] * 12
    modules = {r.headers["x-module"] for r in results}
    # Each instance its own module, as many as the function may grow to (a function that waits grows
    # by as many instances as waits may be held: LocalStack's WAITING_FUNCTIONS).
    api = stack.functions["ApiFunction"]
    assert isinstance(api, LocalFunction) and 1 <= len(modules) <= api.max_instances


def test_a_stopped_stack_leaves_no_container_wide_adapter_behind(stack: LocalStack) -> None:
    """start() binds holdpoint.assembly's container-wide adapters to the stack's environment (its
    timer group, its moto endpoint); stop() drops them, so a later test in the process (the unit
    tier's, on moto in-process) builds its own instead of scheduling its timers on a stack that is gone."""
    factories = (assembly.get_timers, assembly.get_store, assembly.get_queue)
    assert assembly.get_timers().group == stack.env["TIMER_SCHEDULE_GROUP"]
    assembly.get_store(), assembly.get_queue()
    stack.stop(keep_moto=True)
    assert [factory.cache_info().currsize for factory in factories] == [0, 0, 0]
