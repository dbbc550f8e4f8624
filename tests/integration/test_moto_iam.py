"""The IAM fixes in holdpoint_local.moto.iam (16-21, 24): with enforcement on, a call is checked
against the resource it names, a transaction and an SQS batch as the actions AWS checks, a role
trusted by a service is assumed by that service only, a CloudFormation role keeps its managed and
inline policies, a state machine's service integration calls with its role, a bodiless GET
verifies, and a management API call is checked as `execute-api:ManageConnections` on its
connection. Each fails on stock moto 5.2.5."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from holdpoint_local import moto as moto_fixes
from holdpoint_local.moto import iam as moto_iam
from tests.waiting import wait_for

ACCOUNT = "123456789012"
REGION = "us-east-1"
OPERATOR = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": REGION}
LAMBDA_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


@pytest.fixture
def iam_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from moto import mock_aws, settings
    from moto.core.authorization import ActionAuthenticatorMixin

    moto_fixes.apply()
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    saved = settings.INITIAL_NO_AUTH_ACTION_COUNT
    with mock_aws():
        moto_iam.enforce(ACCOUNT)
        try:
            yield
        finally:
            settings.INITIAL_NO_AUTH_ACTION_COUNT = saved
            ActionAuthenticatorMixin.request_count = 0


@functools.cache
def op(service: str) -> Any:
    """The operator's client, built once per service (its keys are fixed; moto checks each request)."""
    return boto3.client(service, **OPERATOR)


def role_client(service: str, statements: list[dict[str, Any]], **client_args: Any) -> Any:
    """A client signed by a session of a new role, assumed as the Lambda service."""
    iam = op("iam")
    name = f"r{len(iam.list_roles()['Roles'])}"
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(LAMBDA_TRUST))["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="p",
                        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}))
    sts = boto3.client("sts", aws_access_key_id=moto_iam.LAMBDA_SERVICE_KEY,
                       aws_secret_access_key=moto_iam.LAMBDA_SERVICE_SECRET, region_name=REGION)
    creds = sts.assume_role(RoleArn=arn, RoleSessionName=name)["Credentials"]
    return boto3.client(service, region_name=REGION, aws_access_key_id=creds["AccessKeyId"],
                        aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["SessionToken"],
                        **client_args)


def allow(actions: list[str], *resources: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": actions, "Resource": list(resources)}


def denied(call: Any) -> bool:
    try:
        call()
    except ClientError as exc:
        return exc.response["ResponseMetadata"]["HTTPStatusCode"] == 403 and "AccessDenied" in str(exc)
    return False


def tables(*names: str) -> None:
    for name in names:
        op("dynamodb").create_table(
            TableName=name, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"},
                                  {"AttributeName": "G", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": "Inbox", "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                                     "Projection": {"ProjectionType": "ALL"}}])


def table_arn(name: str) -> str:
    return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"


def test_moto_iam_dynamodb_is_checked_against_the_table_named(iam_aws: None) -> None:
    tables("a", "b")
    ddb = role_client("dynamodb", [allow(["dynamodb:GetItem"], table_arn("a"))])
    ddb.get_item(TableName="a", Key={"PK": {"S": "x"}})
    assert denied(lambda: ddb.get_item(TableName="b", Key={"PK": {"S": "x"}}))


def test_moto_iam_an_index_query_is_checked_against_the_index(iam_aws: None) -> None:
    tables("a")
    ddb = role_client("dynamodb", [allow(["dynamodb:Query"], table_arn("a") + "/index/*")])
    ddb.query(TableName="a", IndexName="Inbox", KeyConditionExpression="G = :g",
              ExpressionAttributeValues={":g": {"S": "x"}})
    assert denied(lambda: ddb.query(TableName="a", KeyConditionExpression="PK = :p",
                                    ExpressionAttributeValues={":p": {"S": "x"}}))


def test_moto_iam_a_transaction_is_checked_as_its_item_actions_on_each_table(iam_aws: None) -> None:
    tables("a", "b")
    ddb = role_client("dynamodb", [allow(["dynamodb:PutItem", "dynamodb:ConditionCheckItem"], table_arn("a"))])
    put = {"Put": {"TableName": "a", "Item": {"PK": {"S": "1"}}}}
    ddb.transact_write_items(TransactItems=[put])
    other = {"Put": {"TableName": "b", "Item": {"PK": {"S": "1"}}}}
    assert denied(lambda: ddb.transact_write_items(TransactItems=[put, other]))
    delete = {"Delete": {"TableName": "a", "Key": {"PK": {"S": "1"}}}}
    assert denied(lambda: ddb.transact_write_items(TransactItems=[delete]))  # no DeleteItem grant


def test_moto_iam_step_functions_is_checked_against_the_state_machine(iam_aws: None) -> None:
    iam_role = f"arn:aws:iam::{ACCOUNT}:role/sfn"
    definition = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})
    arns = [op("stepfunctions").create_state_machine(name=n, definition=definition, roleArn=iam_role)[
        "stateMachineArn"] for n in ("one", "two")]
    sfn = role_client("stepfunctions", [allow(["states:StartExecution"], arns[0]),
                                        allow(["states:SendTaskSuccess"], "*")])
    sfn.start_execution(stateMachineArn=arns[0], input="{}")
    assert denied(lambda: sfn.start_execution(stateMachineArn=arns[1], input="{}"))


def test_moto_iam_a_secret_is_checked_against_its_full_arn(iam_aws: None) -> None:
    arn = op("secretsmanager").create_secret(Name="app/jwt", SecretString="s")["ARN"]
    op("secretsmanager").create_secret(Name="app/other", SecretString="s")
    sm = role_client("secretsmanager", [allow(["secretsmanager:GetSecretValue"], arn)])
    assert sm.get_secret_value(SecretId="app/jwt")["SecretString"] == "s"  # by name: the ARN with its suffix
    assert denied(lambda: sm.get_secret_value(SecretId="app/other"))


def test_moto_iam_a_receipt_kms_key_is_checked_against_its_arn(iam_aws: None) -> None:
    """Fix 31: a KMS call is checked against the key it names, by id, ARN or alias (moto checked `*`)."""
    kms = op("kms")
    ours, other = (kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"] for _ in range(2))
    kms.create_alias(AliasName="alias/receipts", TargetKeyId=ours["KeyId"])
    reader = role_client("kms", [allow(["kms:GetPublicKey"], ours["Arn"])])
    for named in (ours["KeyId"], ours["Arn"], "alias/receipts"):
        assert reader.get_public_key(KeyId=named)["KeyId"].endswith(ours["KeyId"])
    assert denied(lambda: reader.get_public_key(KeyId=other["KeyId"]))
    assert denied(lambda: reader.sign(KeyId=ours["KeyId"], Message=b"m", SigningAlgorithm="ECDSA_SHA_256"))


def test_moto_iam_put_events_is_checked_against_each_entrys_bus(iam_aws: None) -> None:
    bus = op("events").create_event_bus(Name="notify")["EventBusArn"]
    events = role_client("events", [allow(["events:PutEvents"], bus)])
    entry = {"Source": "s", "DetailType": "d", "Detail": "{}"}
    events.put_events(Entries=[{**entry, "EventBusName": "notify"}])
    assert denied(lambda: events.put_events(Entries=[entry]))  # the default bus


def test_moto_iam_a_schedule_is_checked_against_its_group_and_name(iam_aws: None) -> None:
    for group in ("timers", "other"):
        op("scheduler").create_schedule_group(Name=group)
    scheduler = role_client("scheduler", [allow(["scheduler:CreateSchedule"],
                                                f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/timers/*")])
    target = {"Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:q.fifo", "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/t"}

    def create(group: str) -> Any:
        return scheduler.create_schedule(Name="n", GroupName=group, ScheduleExpression="at(2030-01-01T00:00:00)",
                                         FlexibleTimeWindow={"Mode": "OFF"}, Target=target)

    create("timers")  # the grant's group
    assert denied(lambda: create("other"))


def test_moto_iam_an_sqs_batch_is_checked_as_its_single_action(iam_aws: None) -> None:
    queue = op("sqs").create_queue(QueueName="q")["QueueUrl"]
    arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:q"
    op("sqs").send_message(QueueUrl=queue, MessageBody="m")
    sqs = role_client("sqs", [allow(["sqs:ReceiveMessage", "sqs:DeleteMessage"], arn)])
    [message] = sqs.receive_message(QueueUrl=queue)["Messages"]
    out = sqs.delete_message_batch(QueueUrl=queue, Entries=[{"Id": "0", "ReceiptHandle": message["ReceiptHandle"]}])
    assert out["Successful"] == [{"Id": "0"}]
    assert denied(lambda: sqs.send_message_batch(QueueUrl=queue, Entries=[{"Id": "0", "MessageBody": "m"}]))


def test_moto_iam_an_xray_call_is_checked_as_its_api_action(iam_aws: None) -> None:
    """Fix 26: GetTraceSummaries is `xray:GetTraceSummaries` (moto checked `xray:TraceSummaries`)."""
    window = {"StartTime": 0, "EndTime": 1}
    reader = role_client("xray", [allow(["xray:GetTraceSummaries", "xray:BatchGetTraces"], "*")])
    assert reader.get_trace_summaries(**window)["TraceSummaries"] == []
    assert reader.batch_get_traces(TraceIds=["1-5759e988-bd862e3fe1be46a994272793"])["Traces"] == []
    assert denied(lambda: reader.put_trace_segments(TraceSegmentDocuments=[]))


def test_moto_iam_a_management_api_call_is_checked_on_its_verb_and_connection(iam_aws: None) -> None:
    stage = "https://abc123.execute-api.us-east-1.amazonaws.com/live"
    posts = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:abc123/live/POST/@connections/*"
    granted = role_client("apigatewaymanagementapi", [allow(["execute-api:ManageConnections"], posts)],
                          endpoint_url=stage)
    granted.post_to_connection(ConnectionId="c1=", Data=b"{}")
    assert denied(lambda: granted.delete_connection(ConnectionId="c1="))  # POST only
    other = role_client("apigatewaymanagementapi", [allow(["execute-api:ManageConnections"], posts)],
                        endpoint_url=stage.replace("abc123", "zzz999"))
    assert denied(lambda: other.post_to_connection(ConnectionId="c1=", Data=b"{}"))  # another API
    none = role_client("apigatewaymanagementapi", [allow(["dynamodb:GetItem"], "*")], endpoint_url=stage)
    assert denied(lambda: none.post_to_connection(ConnectionId="c1=", Data=b"{}"))


def test_moto_iam_a_role_trusted_by_a_service_is_assumed_by_that_service_only(iam_aws: None) -> None:
    arn = op("iam").create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps(LAMBDA_TRUST))["Role"]["Arn"]
    service = boto3.client("sts", aws_access_key_id=moto_iam.LAMBDA_SERVICE_KEY,
                           aws_secret_access_key=moto_iam.LAMBDA_SERVICE_SECRET, region_name=REGION)
    assert service.assume_role(RoleArn=arn, RoleSessionName="fn")["Credentials"]["AccessKeyId"]
    assert denied(lambda: op("sts").assume_role(RoleArn=arn, RoleSessionName="fn"))  # the operator is not Lambda


def test_moto_iam_a_state_machine_integration_calls_with_its_role(iam_aws: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Fix 19: an `sqs:sendMessage` task is checked against the state machine's role, as ParkBranch's
    is. Stock moto signs it with the key `ak`, which IAM refuses, so even the granted send fails."""
    from moto.core.config import default_user_config

    monkeypatch.setitem(default_user_config, "stepfunctions", {"execute_state_machine": True})  # type: ignore[arg-type]
    urls = {name: op("sqs").create_queue(QueueName=name)["QueueUrl"] for name in ("granted", "other")}
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    role = op("iam").create_role(RoleName="sfn", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    grant = allow(["sqs:SendMessage"], f"arn:aws:sqs:{REGION}:{ACCOUNT}:granted")
    op("iam").put_role_policy(RoleName="sfn", PolicyName="p",
                              PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [grant]}))
    definition = {"StartAt": "Send", "States": {"Send": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl.$": "$.queue", "MessageBody": "sent"}, "End": True}}}
    sfn = op("stepfunctions")
    machine = sfn.create_state_machine(name="send", definition=json.dumps(definition), roleArn=role)["stateMachineArn"]

    def run(queue: str) -> str:
        execution = sfn.start_execution(stateMachineArn=machine, name=queue, input=json.dumps({"queue": urls[queue]}))
        status: str = wait_for(lambda: (s := sfn.describe_execution(executionArn=execution["executionArn"])[
            "status"]) != "RUNNING" and s, f"the execution sending to {queue}", timeout=30)
        return status

    assert run("granted") == "SUCCEEDED"
    assert [m["Body"] for m in op("sqs").receive_message(QueueUrl=urls["granted"])["Messages"]] == ["sent"]
    assert run("other") == "FAILED"  # the role has no grant on it
    assert "Messages" not in op("sqs").receive_message(QueueUrl=urls["other"])


def test_moto_iam_a_bodiless_get_verifies(iam_aws: None) -> None:
    assert op("lambda").list_functions()["Functions"] == []


def test_moto_iam_a_cloudformation_role_keeps_its_managed_and_inline_policies(iam_aws: None) -> None:
    tables("a")
    template = {"Resources": {"Role": {"Type": "AWS::IAM::Role", "Properties": {
        "AssumeRolePolicyDocument": LAMBDA_TRUST,
        "ManagedPolicyArns": ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"],
        "Policies": [{"PolicyName": "read", "PolicyDocument": {
            "Version": "2012-10-17", "Statement": [allow(["dynamodb:GetItem"], table_arn("a"))]}}]}}}}
    op("cloudformation").create_stack(StackName="s", TemplateBody=json.dumps(template))
    [role] = [r for r in op("iam").list_roles()["Roles"] if r["RoleName"].startswith("s-Role")]
    attached = op("iam").list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"]
    assert [p["PolicyName"] for p in attached] == ["AWSLambdaBasicExecutionRole"]
    sts = boto3.client("sts", aws_access_key_id=moto_iam.LAMBDA_SERVICE_KEY,
                       aws_secret_access_key=moto_iam.LAMBDA_SERVICE_SECRET, region_name=REGION)
    creds = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="fn")["Credentials"]
    ddb = boto3.client("dynamodb", region_name=REGION, aws_access_key_id=creds["AccessKeyId"],
                       aws_secret_access_key=creds["SecretAccessKey"], aws_session_token=creds["SessionToken"])
    ddb.get_item(TableName="a", Key={"PK": {"S": "x"}})
    assert denied(lambda: ddb.put_item(TableName="a", Item={"PK": {"S": "x"}}))


def test_moto_iam_gap_a_condition_is_not_evaluated(iam_aws: None) -> None:
    """Gap (local/README.md): moto evaluates no condition key of a request, so an Allow under a
    Condition AWS would refuse (the call's region is not eu-west-1) grants locally, and a Deny
    under a Condition always applies. No role policy in template.yaml has a Condition
    (test_template_iam.py keeps it so), so the gap does not widen what the local stack allows."""
    tables("a")
    region = {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}
    ddb = role_client("dynamodb", [{**allow(["dynamodb:GetItem"], table_arn("a")), "Condition": region}])
    ddb.get_item(TableName="a", Key={"PK": {"S": "x"}})  # AWS: AccessDenied


def test_moto_iam_gap_no_function_role_grants_under_a_condition() -> None:
    """The condition gap cannot widen the local stack: no policy of a function role has one."""
    from holdpoint_local.least_privilege import granted
    from holdpoint_local.provision import load_template, translate

    translated = translate(load_template())["Resources"]
    roles = [r for r in translated.values() if r["Type"] == "AWS::IAM::Role"]
    assert roles and '"Condition":' not in json.dumps([r["Properties"].get("Policies", []) for r in roles])
    assert set(granted()) >= {"ApiFunction", "EngineFunction", "AuthorizerFunction", "ResumeFunction",
                              "NotifierFunction", "ChannelsFunction", "LinksFunction"}


def test_moto_iam_a_lambda_invoke_is_checked_as_invoke_function_on_its_arn(iam_aws: None, monkeypatch: Any) -> None:
    """Fix 30: an invoke is `lambda:InvokeFunction` on the function's ARN (moto checked `lambda:Invoke` on `*`)."""
    from moto.core.config import default_user_config

    from holdpoint_local.moto.awslambda import INVOKE_KEY
    from tests.integration.test_moto_fixes import LambdaEndpointProbe

    probe = LambdaEndpointProbe()
    try:
        monkeypatch.setitem(default_user_config, "lambda", {INVOKE_KEY: probe.url})
        functions = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:customer-*"
        invoker = role_client("lambda", [allow(["lambda:InvokeFunction"], functions)])
        invoker.invoke(FunctionName=functions.replace("*", "a"), InvocationType="Event", Payload=b"{}")
        invoker.invoke(FunctionName="customer-b", InvocationType="Event", Payload=b"{}")  # a name: this account's
        assert denied(lambda: invoker.invoke(FunctionName=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:other",
                                             InvocationType="Event", Payload=b"{}"))
        assert len(probe.seen) == 2
    finally:
        probe.server.shutdown()


def test_email_channel_moto_iam_send_email_is_checked_against_the_sender_identity(iam_aws: None) -> None:
    """Fix 33: stock moto checked SES v2 SendEmail against `*`, so a grant on the sender's identity
    never matched (and a grant on `*` let a function send as anyone)."""
    for identity in ("sender@fx.example", "other@fx.example", "fx-domain.example"):
        op("sesv2").create_email_identity(EmailIdentity=identity)
    ses = role_client("sesv2", [allow(["ses:SendEmail"], f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/sender@fx.example",
                                      f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/fx-domain.example")])

    def send(sender: str) -> Any:
        return ses.send_email(FromEmailAddress=sender, Destination={"ToAddresses": ["a@fx.example"]},
                              Content={"Simple": {"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "t"}}}})

    send("sender@fx.example")
    send("anyone@fx-domain.example")  # a domain identity: checked on the domain
    assert denied(lambda: send("other@fx.example"))
