"""moto 5.2.5 really executes ParkBranch: waitForTaskToken -> SendTaskSuccess -> the end (the
release's own wake message wakes the branch), and TimeoutSecondsPath -> Catch States.Timeout ->
expire. Provisioned from template.yaml itself."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import WorkQueue, group_id
from holdpoint.core.state import Interrupt
from holdpoint_local.memory.parking import MemoryParkRecords
from holdpoint_local.moto.server import MotoServer
from holdpoint_local.provision import Provisioned, load_template, provision
from tests.waiting import wait_for


@pytest.fixture
def park(moto_server: MotoServer, stack_name: str) -> tuple[Provisioned, Any, Any]:
    prov = provision(moto_server.endpoint, stack_name=stack_name)
    kw = {"endpoint_url": moto_server.endpoint, "region_name": "us-east-1"}
    return prov, boto3.client("stepfunctions", **kw), boto3.client("sqs", **kw)


def _receive(sqs: Any, url: str, timeout: float = 10.0) -> dict[str, Any]:
    """The next message on the queue (deleted once read)."""

    def one() -> dict[str, Any] | None:
        resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=1,
                                   MessageSystemAttributeNames=["All"])
        for msg in resp.get("Messages", []):
            sqs.delete_message(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"])
            return msg
        return None

    return wait_for(one, "a message on the work queue", timeout)


def _status(sfn: Any, arn: str) -> str:
    return str(sfn.describe_execution(executionArn=arn)["status"])


def _wait_finished(sfn: Any, arn: str, timeout: float = 10.0) -> str:
    """The execution's status once it has left RUNNING."""
    return wait_for(lambda: _status(sfn, arn) if _status(sfn, arn) != "RUNNING" else "",
                    f"execution {arn} to finish", timeout)


TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _input(timeout_seconds: int) -> dict[str, Any]:
    return {
        "tenant": "dev",
        "session_id": "s-1",
        "interrupt_id": "int-1",
        "group_id": "T#dev#S#s-1",
        "dedup_key": uuid.uuid4().hex,
        "generation": 2,
        "timeout_seconds": timeout_seconds,
        "trace": TRACE,  # the trace the park and expiry messages carry on (issue item 7)
    }


def _park(sfn: Any, sqs: Any, prov: Provisioned, inp: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Start the execution (twice: idempotent) and take its park message off the queue."""
    arn = prov.env["PARK_STATE_MACHINE_ARN"]
    ex = sfn.start_execution(stateMachineArn=arn, name=inp["dedup_key"], input=json.dumps(inp))
    again = sfn.start_execution(stateMachineArn=arn, name=inp["dedup_key"], input=json.dumps(inp))
    assert again["executionArn"] == ex["executionArn"]  # retried start is idempotent
    msg = _receive(sqs, prov.env["WORK_QUEUE_URL"])
    body = json.loads(msg["Body"])
    assert {k: body[k] for k in ("kind", "tenant", "session_id", "interrupt_id", "generation")} == {
        "kind": "park", "tenant": "dev", "session_id": "s-1", "interrupt_id": "int-1", "generation": 2,
    }  # fmt: skip
    assert body["task_token"]
    assert body["trace"] == inp["trace"]  # the engine's hop for the park message continues the turn's trace
    assert msg["Attributes"]["MessageGroupId"] == inp["group_id"]
    assert msg["Attributes"]["MessageDeduplicationId"] == f"{inp['dedup_key']}-park"
    assert _status(sfn, ex["executionArn"]) == "RUNNING"  # parked, waiting for the token
    return str(ex["executionArn"]), body


def test_send_task_success_ends_the_execution_in_its_one_billed_step(park: tuple[Provisioned, Any, Any]) -> None:
    prov, sfn, sqs = park
    arn, body = _park(sfn, sqs, prov, _input(300))
    sfn.send_task_success(taskToken=body["task_token"], output=json.dumps({"approved": True}))
    assert _wait_finished(sfn, arn) == "SUCCEEDED"
    entered = [e["stateEnteredEventDetails"]["name"] for e in sfn.get_execution_history(executionArn=arn)["events"]
               if "stateEnteredEventDetails" in e]
    assert entered == ["Park"]  # the success path bills one step: the wake is not the state machine's
    left = sqs.receive_message(QueueUrl=prov.env["WORK_QUEUE_URL"], WaitTimeSeconds=1).get("Messages", [])
    assert left == []  # a finished execution sent all it ever will
    with pytest.raises(ClientError) as err:  # once the execution moved on, the token is spent
        sfn.send_task_success(taskToken=body["task_token"], output="{}")
    assert err.value.response["Error"]["Code"] in ("InvalidToken", "TaskTimedOut")


def test_release_puts_the_wake_on_the_queue_then_ends_the_execution(park: tuple[Provisioned, Any, Any]) -> None:
    prov, sfn, sqs = park
    inp = _input(300)
    arn, body = _park(sfn, sqs, prov, inp)
    interrupt = Interrupt("int-1", "tool", "approval", None, "2026-01-01T00:00:00Z", inp["dedup_key"],
                          status="resolved", generation=2)
    records = MemoryParkRecords()  # the parking's record of the raise, holding the execution's token
    records.keep_token("dev", "s-1", "int-1", 2, body["task_token"])
    parking = Parking(prov.env["PARK_STATE_MACHINE_ARN"], sfn, WorkQueue(prov.env["WORK_QUEUE_URL"], sqs), records)
    parking.release("dev", "s-1", interrupt)
    wake = _receive(sqs, prov.env["WORK_QUEUE_URL"])
    assert json.loads(wake["Body"]) == {
        "kind": "wake", "outcome": "resumed", "tenant": "dev", "session_id": "s-1", "interrupt_id": "int-1",
        "generation": 2,
    }  # fmt: skip
    assert wake["Attributes"]["MessageDeduplicationId"] == f"{inp['dedup_key']}-wake"
    assert wake["Attributes"]["MessageGroupId"] == group_id("dev", "s-1")
    assert _wait_finished(sfn, arn) == "SUCCEEDED"
    parking.release("dev", "s-1", interrupt)  # a retried release: the same wake again, and a spent token
    again = sqs.receive_message(QueueUrl=prov.env["WORK_QUEUE_URL"], WaitTimeSeconds=1,
                                MessageSystemAttributeNames=["All"]).get("Messages", [])
    # SQS drops it within the 5-minute deduplication window (moto may not once the first is deleted);
    # either way it is the same wake, which the engine applies once (`woken`).
    assert [(m["Body"], m["Attributes"]["MessageDeduplicationId"]) for m in again] in (
        [], [(wake["Body"], wake["Attributes"]["MessageDeduplicationId"])])


def test_park_times_out_into_expire(park: tuple[Provisioned, Any, Any]) -> None:
    prov, sfn, sqs = park
    queue = prov.env["WORK_QUEUE_URL"]
    inp = _input(1)
    ex = sfn.start_execution(
        stateMachineArn=prov.env["PARK_STATE_MACHINE_ARN"], name=inp["dedup_key"], input=json.dumps(inp)
    )
    assert json.loads(_receive(sqs, queue)["Body"])["kind"] == "park"
    expire = _receive(sqs, queue)
    started = sfn.describe_execution(executionArn=ex["executionArn"])["startDate"].timestamp()
    assert int(expire["Attributes"]["SentTimestamp"]) / 1000 - started >= 0.9  # by the execution's own clock
    assert json.loads(expire["Body"]) == {
        "kind": "wake", "outcome": "expired", "tenant": "dev", "session_id": "s-1", "interrupt_id": "int-1",
        "generation": 2, "trace": TRACE,
    }  # fmt: skip
    assert expire["Attributes"]["MessageDeduplicationId"] == f"{inp['dedup_key']}-expire"
    assert _wait_finished(sfn, ex["executionArn"]) == "SUCCEEDED"


def test_provision_is_idempotent(moto_server: MotoServer, stack_name: str) -> None:
    first = provision(moto_server.endpoint, stack_name=stack_name)
    second = provision(moto_server.endpoint, stack_name=stack_name)
    assert first.env == second.env
    ddb = boto3.client("dynamodb", endpoint_url=moto_server.endpoint, region_name="us-east-1")
    table = ddb.describe_table(TableName=first.env["TABLE_NAME"])["Table"]
    declared = load_template()["Resources"]["Table"]["Properties"]["GlobalSecondaryIndexes"]
    assert [g["IndexName"] for g in table["GlobalSecondaryIndexes"]] == [g["IndexName"] for g in declared]
    ttl = ddb.describe_time_to_live(TableName=first.env["TABLE_NAME"])["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "ttl"
    sqs = boto3.client("sqs", endpoint_url=moto_server.endpoint, region_name="us-east-1")
    attrs = sqs.get_queue_attributes(QueueUrl=first.env["WORK_QUEUE_URL"], AttributeNames=["All"])["Attributes"]
    assert attrs["FifoQueue"] == "true"
    assert json.loads(attrs["RedrivePolicy"])["maxReceiveCount"] == 5
    routes = {(r.method, r.path): r for r in first.routes}
    assert routes[("GET", "/v1/openapi.json")].auth is False
    assert routes[("POST", "/v1/sessions")].authorizer == "AuthorizerFunction"
    assert routes[("POST", "/v1/sessions/{session_id}/interrupts/{interrupt_id}/resume")].function == (
        "ResumeFunction"
    )
    assert [(m.function, m.batch_size, m.report_batch_item_failures) for m in first.sqs_mappings] == [
        ("EngineFunction", 10, True)
    ]
