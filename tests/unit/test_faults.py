"""The fault injector (local/holdpoint_local/faults.py): AWS's refusals in their real shapes,
seen by botocore's retries per attempt, and read by the adapters as the ports' refusals."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from holdpoint.aws import clients
from holdpoint.aws.errors import Refused, SdkFailure
from holdpoint.ports import Throttled, Unavailable
from holdpoint_local.faults import REFUSALS, Faults, refusals_for

KEY = {"PK": {"S": "x"}, "SK": {"S": "y"}}


def _client(service: str, attempts: int = 1) -> Any:
    return boto3.client(service, config=Config(retries={"mode": "standard", "total_max_attempts": attempts}))


def test_faults_answer_aws_codes_and_statuses(aws: dict[str, str]) -> None:
    for service, operation, call in (
            ("dynamodb", "GetItem", lambda c: c.get_item(TableName="holdpoint", Key=KEY)),
            ("sqs", "SendMessage", lambda c: c.send_message(QueueUrl=aws["WORK_QUEUE_URL"], MessageBody="{}",
                                                            MessageGroupId="g", MessageDeduplicationId="d")),
            ("stepfunctions", "StartExecution", lambda c: c.start_execution(
                stateMachineArn=aws["PARK_STATE_MACHINE_ARN"], name="n", input="{}")),
            ("stepfunctions", "SendTaskSuccess", lambda c: c.send_task_success(taskToken="t", output="{}")),
            ("secretsmanager", "GetSecretValue", lambda c: c.get_secret_value(SecretId=aws["JWT_SECRET_ARN"]))):
        client = _client(service)
        for code in refusals_for(service, operation):
            if code == "TransactionConflict":
                continue
            faults = Faults(anywhere=True).attach(client)
            faults.inject(service, operation, code, first=1)
            with pytest.raises(ClientError) as got:
                call(client)
            faults.uninstall()
            assert got.value.response["Error"]["Code"] == code
            assert got.value.response["ResponseMetadata"]["HTTPStatusCode"] == REFUSALS[code].status
        call(client)  # uninstalled: the call goes through


def test_faults_transaction_conflict_carries_one_reason_per_item(aws: dict[str, str]) -> None:
    client = _client("dynamodb")
    Faults(anywhere=True).attach(client).inject("dynamodb", "TransactWriteItems", "TransactionConflict", first=1)
    ops = [{"Put": {"TableName": "holdpoint", "Item": {"PK": {"S": "a"}, "SK": {"S": str(i)}}}} for i in range(3)]
    with pytest.raises(ClientError) as got:
        client.transact_write_items(TransactItems=ops)
    assert got.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in got.value.response["CancellationReasons"]] == ["TransactionConflict", "None", "None"]


def test_faults_are_per_attempt_so_botocore_retries_them(aws: dict[str, str]) -> None:
    """before-send fires per attempt: two throttles are absorbed by three attempts, three are not."""
    client = _client("dynamodb", attempts=3)
    faults = Faults(anywhere=True).attach(client)
    rule = faults.inject("dynamodb", "GetItem", "ThrottlingException", first=2)
    client.get_item(TableName="holdpoint", Key=KEY)
    assert (rule.seen, rule.fired) == (3, 2)
    faults.inject("dynamodb", "GetItem", "InternalServerError", first=3)
    with pytest.raises(ClientError):
        client.get_item(TableName="holdpoint", Key=KEY)


def test_faults_every_nth_probability_and_stop(aws: dict[str, str]) -> None:
    client = _client("dynamodb")
    faults = Faults(seed=7, anywhere=True).attach(client)
    every = faults.inject("dynamodb", "GetItem", "ThrottlingException", every=3)
    outcomes = []
    for _ in range(6):
        try:
            client.get_item(TableName="holdpoint", Key=KEY)
            outcomes.append(True)
        except ClientError:
            outcomes.append(False)
    assert outcomes == [True, True, False, True, True, False] and every.fired == 2
    faults.stop()
    draws = [Faults(seed=3).inject("sqs", None, "ThrottlingException", probability=0.5) for _ in range(2)]
    rng_a, rng_b = Faults(seed=3).rng, Faults(seed=3).rng
    assert [draws[0].fires(rng_a) for _ in range(20)] == [draws[1].fires(rng_b) for _ in range(20)]
    client.get_item(TableName="holdpoint", Key=KEY)


def test_clients_refusals_about_load_become_port_exceptions(aws: dict[str, str]) -> None:
    """Holdpoint's clients raise Throttled/Unavailable after their attempts, and any other refusal
    as `Refused` with AWS's code: Holdpoint's own classes, none of them botocore's."""
    client = clients.client("sqs")
    faults = Faults(anywhere=True).attach(client._client)
    url = aws["WORK_QUEUE_URL"]
    faults.inject("sqs", "GetQueueAttributes", "ThrottlingException", first=clients.POLICIES["sqs"].attempts)
    with pytest.raises(Throttled) as throttled:
        client.get_queue_attributes(QueueUrl=url)
    assert not isinstance(throttled.value, ClientError) and throttled.value.code == "ThrottlingException"
    faults.inject("sqs", "GetQueueAttributes", "ServiceUnavailable", first=clients.POLICIES["sqs"].attempts)
    with pytest.raises(Unavailable) as unavailable:
        client.get_queue_attributes(QueueUrl=url)
    assert not isinstance(unavailable.value, ClientError)
    with pytest.raises(Refused) as other:  # not about load: AWS's code, in Holdpoint's class
        client.get_queue_attributes(QueueUrl=url + "-missing")
    assert not isinstance(other.value, ClientError | Throttled | Unavailable) and other.value.code, other.value


@pytest.mark.parametrize(("raised", "kind"), [
    (ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "slow down"},
                  "ResponseMetadata": {"HTTPStatusCode": 429}}, "Invoke"), "answered"),
    (ReadTimeoutError(endpoint_url="https://lambda"), "timeout"),
    (NoCredentialsError(), "no_credentials"),
    (EndpointConnectionError(endpoint_url="https://lambda"), "unreachable"),
    (ConnectTimeoutError(endpoint_url="https://lambda"), "unreachable"),
    (ParamValidationError(report="FunctionName is required"), "other"),
])
def test_sdk_failures_come_out_as_holdpoints_own_class(raised: Exception, kind: str) -> None:
    """The callers that read a customer's or a model's failures themselves (a worker Lambda,
    Bedrock) get `SdkFailure`, never botocore's classes (an import contract keeps botocore in
    aws/clients.py)."""
    with pytest.raises(SdkFailure) as got, clients.sdk_failures():
        raise raised
    assert got.value.kind == kind and not isinstance(got.value, BotoCoreError | ClientError)
    if kind == "answered":
        assert (got.value.code, got.value.status, got.value.message) == ("TooManyRequestsException", 429, "slow down")
