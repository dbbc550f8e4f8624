"""The pause half of the `ports.Parking` contract (docs/ARCHITECTURE.md, "Parking"), held by the
Step Functions adapter (aws/parking.py) on moto's executing Step Functions and by its in-memory twin
(`MemoryParking`, memory/ports.py): a raise is paused once however often its pause is started, another
raise of the interrupt is another pause, and a pause is ended once (a spent token is a no-op, False).
The other halves are contracts of their own: the park records (tests/unit/test_park_records_contract.py)
and the wake queue (tests/unit/test_queue_contract.py).

On moto the state machine is one task with ParkBranch's integration (template.yaml): SQS
`sendMessage.waitForTaskToken`, its message carrying the task token, which the test reads off the
queue as the engine would, under an execution role allowed only sqs:SendMessage. It needs moto's
server (the run's `moto_server`: execution on, IAM enforced), so it is in this tier."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from holdpoint.core.state import Interrupt
from holdpoint_local import FAKE_ENV
from holdpoint_local.memory.ports import MemoryParking
from holdpoint_local.moto.server import MotoServer

REGION = "us-east-1"


@dataclass
class Side:
    parking: Any
    pauses: Callable[[], int]
    """How many pauses are open or were started."""
    token: Callable[[Interrupt], str]
    """The token that ends the raise's pause, as the pause hands it over."""


def raised(generation: int = 1) -> Interrupt:
    return Interrupt("int-1", "tool", "confirm", None, "2026-12-01T00:00:00.000Z", f"dedup-{generation}",
                     generation=generation, expires_in=600)


def _client(moto: MotoServer, service: str) -> Any:
    return boto3.client(service, endpoint_url=moto.endpoint, region_name=REGION,
                        aws_access_key_id=FAKE_ENV["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=FAKE_ENV["AWS_SECRET_ACCESS_KEY"])


def _on_step_functions(moto: MotoServer) -> Side:
    from holdpoint.aws.parking import Parking

    sqs, sfn = _client(moto, "sqs"), _client(moto, "stepfunctions")
    url = sqs.create_queue(QueueName=f"park-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    definition = {"StartAt": "Park", "States": {"Park": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "End": True,
        "Parameters": {"QueueUrl": url, "MessageBody": {"dedup_key.$": "$.dedup_key", "task_token.$": "$$.Task.Token"}},
    }}}
    iam = _client(moto, "iam")
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "states.amazonaws.com"}}]}
    role = iam.create_role(RoleName=f"park-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    iam.put_role_policy(RoleName=role["RoleName"], PolicyName="park", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}]}))
    arn = sfn.create_state_machine(name=f"park-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition),
                                   roleArn=role["Arn"])["stateMachineArn"]
    tokens: dict[str, str] = {}

    def token(interrupt: Interrupt) -> str:
        for _ in range(30):  # each receive waits up to 1 s for the execution's message
            if interrupt.dedup_key in tokens:
                break
            for message in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []):
                body = json.loads(message["Body"])
                tokens[body["dedup_key"]] = body["task_token"]
        return tokens[interrupt.dedup_key]

    return Side(Parking(state_machine_arn=arn, client=sfn),
                lambda: len(sfn.list_executions(stateMachineArn=arn)["executions"]), token)


@pytest.fixture(params=["memory", "stepfunctions"])
def side(request: pytest.FixtureRequest) -> Side:
    if request.param == "memory":
        memory = MemoryParking()
        return Side(memory, lambda: len(memory.started), lambda i: memory.start("t1", "s1", i))
    return _on_step_functions(request.getfixturevalue("moto_server"))


def test_r13_a_raise_is_paused_once_however_often_its_pause_is_started(side: Side) -> None:
    first = side.parking.start("t1", "s1", raised())
    assert side.parking.start("t1", "s1", raised()) == first
    assert side.pauses() == 1


def test_r13_another_raise_of_the_interrupt_is_another_pause(side: Side) -> None:
    first = side.parking.start("t1", "s1", raised(1))
    assert side.parking.start("t1", "s1", raised(2)) != first
    assert side.pauses() == 2


def test_r7_a_pause_is_ended_once_and_a_spent_token_is_a_no_op(side: Side) -> None:
    side.parking.start("t1", "s1", raised())
    token = side.token(raised())
    assert side.parking.complete(token, {"outcome": "resumed"}) is True
    assert side.parking.complete(token, {"outcome": "resumed"}) is False
