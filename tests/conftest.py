"""Shared fixtures. Unit tests run against moto's in-process AWS, built from template.yaml."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parent.parent

for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
                   "POWERTOOLS_METRICS_NAMESPACE": "Holdpoint", "POWERTOOLS_DEV": "false"}.items():
    os.environ.setdefault(key, value)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """moto's in-process AWS with the table, queue and state machine the template declares."""
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        ddb = boto3.client("dynamodb")
        ddb.create_table(
            TableName="holdpoint", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK", "GSI1PK", "GSI1SK")],
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            GlobalSecondaryIndexes=[{"IndexName": "Inbox", "Projection": {"ProjectionType": "ALL"}, "KeySchema": [
                {"AttributeName": "GSI1PK", "KeyType": "HASH"}, {"AttributeName": "GSI1SK", "KeyType": "RANGE"}]}])
        queue = boto3.client("sqs").create_queue(
            QueueName="work.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        definition = {"StartAt": "Park", "States": {"Park": {"Type": "Pass", "End": True}}}
        machine = boto3.client("stepfunctions").create_state_machine(
            name="park", definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/park")["stateMachineArn"]
        timer = boto3.client("stepfunctions").create_state_machine(
            name="timer", definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/timer")["stateMachineArn"]
        env = {"TABLE_NAME": "holdpoint", "WORK_QUEUE_URL": queue, "PARK_STATE_MACHINE_ARN": machine,
               "TIMER_STATE_MACHINE_ARN": timer}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        yield env
