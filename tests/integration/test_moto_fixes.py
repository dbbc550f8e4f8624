"""The emulator fixes in holdpoint_local.moto (dynamodb, sqs, cloudformation): conditional writes stay atomic under
concurrent requests, a cancelled transaction leaves every item as it was, and a FIFO message
group is in flight with one receiver at a time."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import moto.dynamodb.models as backend_module
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.dynamodb.models import table as table_module
from moto.sqs.models import Queue

from holdpoint_local.moto import sqs as moto_sqs
from tests.tables import count_items, moto_item_count
from tests.waiting import wait_for

RACE_WINDOW_SECS = 0.003  # long enough for a second request to interleave, were nothing locked


def table(aws: dict[str, str]) -> tuple[Any, str]:
    return boto3.client("dynamodb", region_name="us-east-1"), aws["TABLE_NAME"]


def key(sk: str) -> dict[str, Any]:
    return {"PK": {"S": "S#t#s"}, "SK": {"S": sk}}


def slow_conditions(monkeypatch: Any) -> None:
    """Widen the gap between reading an item and checking a condition on it, where moto's threads
    could interleave before the fix."""
    for module in (backend_module, table_module):
        real = module.get_filter_expression

        def slow(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            time.sleep(RACE_WINDOW_SECS)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, "get_filter_expression", slow)


def test_concurrent_conditional_creates_have_exactly_one_winner(aws: dict[str, str], monkeypatch: Any) -> None:
    ddb, name = table(aws)
    slow_conditions(monkeypatch)

    def create(i: int) -> bool:
        try:
            ddb.put_item(TableName=name, Item={**key("I#1"), "by": {"N": str(i)}},
                         ConditionExpression="attribute_not_exists(PK)")
            return True
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException"
            return False

    with ThreadPoolExecutor(max_workers=10) as pool:
        wins = list(pool.map(create, range(10)))
    assert wins.count(True) == 1


def test_a_cancelled_transaction_never_undoes_another_writer(aws: dict[str, str], monkeypatch: Any) -> None:
    ddb, name = table(aws)
    ddb.put_item(TableName=name, Item={**key("N#1"), "text": {"S": "exists"}})
    slow_conditions(monkeypatch)

    def doomed(_: int) -> None:
        with pytest.raises(ClientError):
            ddb.transact_write_items(TransactItems=[
                {"Put": {"TableName": name, "Item": {**key(f"Q#{_}"), "text": {"S": "x"}}}},
                {"Put": {"TableName": name, "Item": {**key("N#1"), "text": {"S": "clash"}},
                         "ConditionExpression": "attribute_not_exists(PK)"}}])

    def other(i: int) -> None:
        ddb.put_item(TableName=name, Item={**key(f"E#{i}"), "text": {"S": "mine"}})

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: doomed(i) if i % 2 else other(i), range(16)))
    for i in range(0, 16, 2):
        assert "Item" in ddb.get_item(TableName=name, Key=key(f"E#{i}")), f"write E#{i} was rolled back"
    for i in range(1, 16, 2):
        assert "Item" not in ddb.get_item(TableName=name, Key=key(f"Q#{i}"))


def test_a_cancelled_transaction_leaves_every_item_as_it_was(aws: dict[str, str]) -> None:
    ddb, name = table(aws)
    ddb.put_item(TableName=name, Item={**key("H"), "version": {"N": "1"}, "note": {"S": "before"}})
    ddb.put_item(TableName=name, Item={**key("N#1"), "text": {"S": "kept"}})
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[
            {"Update": {"TableName": name, "Key": key("H"), "UpdateExpression": "SET note = :n, version = :v",
                        "ExpressionAttributeValues": {":n": {"S": "after"}, ":v": {"N": "2"}}}},
            {"Put": {"TableName": name, "Item": {**key("N#2"), "text": {"S": "new"}}}},
            {"Delete": {"TableName": name, "Key": key("N#1")}},
            {"Put": {"TableName": name, "Item": {**key("N#1"), "text": {"S": "clash"}},
                     "ConditionExpression": "attribute_not_exists(PK)"}},
        ])
    assert err.value.response["Error"]["Code"] in ("TransactionCanceledException", "ValidationException")
    header = ddb.get_item(TableName=name, Key=key("H"))["Item"]
    assert header["note"]["S"] == "before" and header["version"]["N"] == "1"
    assert ddb.get_item(TableName=name, Key=key("N#1"))["Item"]["text"]["S"] == "kept"
    assert "Item" not in ddb.get_item(TableName=name, Key=key("N#2"))


def test_a_cancelled_transaction_on_a_condition_rolls_back_earlier_entries(aws: dict[str, str]) -> None:
    ddb, name = table(aws)
    ddb.put_item(TableName=name, Item={**key("H"), "version": {"N": "1"}})
    with pytest.raises(ClientError) as err:
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": name, "Item": {**key("N#9"), "text": {"S": "new"}},
                     "ConditionExpression": "attribute_not_exists(PK)"}},
            {"Update": {"TableName": name, "Key": key("H"), "UpdateExpression": "SET version = :n",
                        "ConditionExpression": "version = :v",
                        "ExpressionAttributeValues": {":v": {"N": "7"}, ":n": {"N": "8"}}}},
        ])
    assert err.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert "Item" not in ddb.get_item(TableName=name, Key=key("N#9"))
    assert ddb.get_item(TableName=name, Key=key("H"))["Item"]["version"]["N"] == "1"


def test_a_transaction_write_does_not_copy_the_table(aws: dict[str, str], monkeypatch: Any) -> None:
    ddb, name = table(aws)
    copied: list[str] = []
    real = copy.deepcopy

    def spy(obj: Any, memo: Any = None) -> Any:
        copied.append(type(obj).__name__)
        return real(obj, memo)

    monkeypatch.setattr(copy, "deepcopy", spy)
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": name, "Item": {**key(f"N#{i}"), "text": {"S": "x"}}}} for i in range(5)])
    assert copied and "Table" not in copied  # items were snapshotted, the table never


def test_written_items_are_not_kept_after_they_are_replaced(aws: dict[str, str]) -> None:
    from moto.dynamodb.models.dynamo_type import Item

    ddb, name = table(aws)
    tracked = len(Item.instances_tracked)  # type: ignore[attr-defined]
    for i in range(20):
        ddb.put_item(TableName=name, Item={**key("H"), "version": {"N": str(i)}})
    assert len(Item.instances_tracked) == tracked  # type: ignore[attr-defined]


def test_a_query_reads_only_its_partition_and_answers_the_same(aws: dict[str, str], monkeypatch: Any) -> None:
    ddb, name = table(aws)
    for pk in ("S#t#a", "S#t#b", "S#t#c"):
        for sk in ("H", "N#2", "N#1", "E#00000003", "E#00000001"):
            ddb.put_item(TableName=name, Item={"PK": {"S": pk}, "SK": {"S": sk}, "v": {"S": pk + sk}})
    listed: list[int] = []
    real = table_module.Table.all_items
    monkeypatch.setattr(table_module.Table, "all_items", lambda self: listed.append(len(real(self))) or real(self))
    out = ddb.query(TableName=name, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": {"S": "S#t#b"}})
    assert [i["SK"]["S"] for i in out["Items"]] == ["E#00000001", "E#00000003", "H", "N#1", "N#2"]
    assert {i["PK"]["S"] for i in out["Items"]} == {"S#t#b"}
    assert listed == [5]  # the queried partition, not the 15 items of the table
    back = ddb.query(TableName=name, KeyConditionExpression="PK = :p AND begins_with(SK, :n)", ScanIndexForward=False,
                     ExpressionAttributeValues={":p": {"S": "S#t#c"}, ":n": {"S": "N#"}})
    assert [i["SK"]["S"] for i in back["Items"]] == ["N#2", "N#1"]
    empty = ddb.query(TableName=name, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": {"S": "none"}})
    assert empty["Items"] == []
    assert len(ddb.scan(TableName=name)["Items"]) == 15  # a Scan still sees every partition


def streaming_table(name: str = "streamed") -> tuple[Any, Any]:
    """A table with a NEW_IMAGE stream, and moto's shard of it (read directly: in-process, botocore
    sends DynamoDB Streams calls to an account-scoped host moto does not route)."""
    from moto.dynamodb.models import dynamodb_backends

    ddb = boto3.client("dynamodb", region_name="us-east-1")
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK")],
                     KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"},
                                {"AttributeName": "SK", "KeyType": "RANGE"}],
                     StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    return ddb, dynamodb_backends["123456789012"]["us-east-1"].get_table(name).stream_shard


def test_a_cancelled_transaction_leaves_no_stream_record(aws: dict[str, str]) -> None:
    ddb, shard = streaming_table()
    ddb.put_item(TableName="streamed", Item={**key("H"), "version": {"N": "1"}})
    before = len(shard.items)
    with pytest.raises(ClientError):
        ddb.transact_write_items(TransactItems=[
            {"Put": {"TableName": "streamed", "Item": {**key("E#1"), "etype": {"S": "session.interrupted"}}}},
            {"Put": {"TableName": "streamed", "Item": {**key("N#1"), "text": {"S": "x"}}}},
            {"Update": {"TableName": "streamed", "Key": key("H"), "UpdateExpression": "SET version = :n",
                        "ConditionExpression": "version = :v",
                        "ExpressionAttributeValues": {":v": {"N": "7"}, ":n": {"N": "8"}}}}])
    assert len(shard.items) == before  # the two writes before the failed condition never happened
    ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": "streamed", "Item": {**key("E#1"), "etype": {"S": "session.interrupted"}}}}])
    assert [r.record["dynamodb"]["Keys"]["SK"]["S"] for r in shard.items[before:]] == ["E#1"]


def test_a_stream_keeps_a_bounded_tail_and_sequence_numbers_keep_counting(aws: dict[str, str],
                                                                          monkeypatch: Any) -> None:
    from holdpoint_local.moto import dynamodb

    monkeypatch.setattr(dynamodb, "STREAM_KEEP", 5)
    ddb, shard = streaming_table()
    first = shard.starting_sequence_number
    for i in range(12):
        ddb.put_item(TableName="streamed", Item={**key(f"E#{i:02d}")})
    assert len(shard.items) == 5
    assert shard.starting_sequence_number == first + 7
    seqs = [int(r["dynamodb"]["SequenceNumber"]) for r in shard.get(first, 100)]  # a reader from the start
    assert seqs == list(range(first + 7, first + 12))  # reads what is kept, in order


def test_a_fifo_group_in_flight_is_not_handed_to_a_receiver_already_waiting(aws: dict[str, str],
                                                                            monkeypatch: Any) -> None:
    """Fix 7. The waiting receiver is held between its rounds (moto's own wait, or the fix's) while
    another receiver takes the group's first message and a second one arrives: stock moto then hands
    the second to the waiting receiver with the first still in flight."""
    first, waiter = boto3.client("sqs"), boto3.client("sqs")
    url = first.create_queue(QueueName="fix7.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    held, go = threading.Event(), threading.Event()
    real_round, real_wait = moto_sqs._wait_round, Queue.wait_for_messages

    def hold(thread_waits: Callable[[], Any]) -> Any:
        if threading.current_thread().name == "waiter" and not go.is_set():
            held.set()
            go.wait(10)
        return thread_waits()

    monkeypatch.setattr(moto_sqs, "_wait_round", lambda queue, t: hold(lambda: real_round(queue, t)))
    monkeypatch.setattr(Queue, "wait_for_messages", lambda self, t: hold(lambda: real_wait(self, t)))
    got: list[dict[str, Any]] = []
    thread = threading.Thread(name="waiter", target=lambda: got.extend(waiter.receive_message(
        QueueUrl=url, WaitTimeSeconds=1, MaxNumberOfMessages=10).get("Messages", [])))
    thread.start()
    assert held.wait(10)
    first.send_message(QueueUrl=url, MessageBody="one", MessageGroupId="session")
    [one] = first.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    first.send_message(QueueUrl=url, MessageBody="two", MessageGroupId="session")
    go.set()
    thread.join(10)
    assert got == []  # "one" is in flight: nothing more of its group for anyone
    first.delete_message(QueueUrl=url, ReceiptHandle=one["ReceiptHandle"])
    assert [m["Body"] for m in first.receive_message(QueueUrl=url)["Messages"]] == ["two"]


# --- fix 8: attribute values are answered as they are stored ----------------------------------

_TEXT = st.text(max_size=8)
_SCALARS = st.one_of(
    st.builds(lambda s: {"S": s}, _TEXT),
    st.builds(lambda n: {"N": str(n)}, st.integers(-10**6, 10**6)),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda ss: {"SS": sorted(ss)}, st.sets(_TEXT, min_size=1, max_size=3)),
    st.builds(lambda ns: {"NS": sorted(str(n) for n in ns)}, st.sets(st.integers(0, 99), min_size=1, max_size=3)),
    st.builds(lambda b: {"B": b}, st.binary(max_size=6)),
    st.builds(lambda bs: {"BS": sorted(bs)}, st.sets(st.binary(min_size=1, max_size=4), min_size=1, max_size=2)),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.builds(lambda m: {"M": m}, st.dictionaries(_TEXT, inner, max_size=3)),
    st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3))), max_leaves=8)
_ITEMS = st.dictionaries(st.text(min_size=1, max_size=6), _VALUES, max_size=5)


def _serializers() -> tuple[Any, Any]:
    """moto's JSON serializer for DynamoDB's GetItem, with fix 8 and as moto ships it."""
    from moto.core.serialize import JSONSerializer, XFormedAttributePicker
    from moto.core.utils import get_service_model

    operation = get_service_model("dynamodb").operation_model("GetItem")

    class Stock(JSONSerializer):
        _serialize_type_map = JSONSerializer._serialize_type_map.__wrapped__  # type: ignore[attr-defined]

    return (JSONSerializer(operation_model=operation, value_picker=XFormedAttributePicker()),
            Stock(operation_model=operation, value_picker=XFormedAttributePicker()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(item=_ITEMS)
def test_an_item_is_answered_exactly_as_moto_serializes_it(aws: dict[str, str], item: dict[str, Any]) -> None:
    """Fix 8 changes no byte of an answer: every kind of attribute value, nested, binary included."""
    fixed, stock = _serializers()
    assert fixed.serialize({"Item": item})["body"] == stock.serialize({"Item": item})["body"]


def test_an_item_without_binary_is_not_walked_through_the_shape_model(aws: dict[str, str], monkeypatch: Any) -> None:
    """Fix 8 is what answers a plain item (stock moto serializes each attribute value as a structure)."""
    from moto.core.serialize import JSONSerializer

    walked: list[str] = []
    real = JSONSerializer._serialize_type_structure

    def spy(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        walked.append(shape.name)
        real(self, serialized, value, shape, key)

    monkeypatch.setattr(JSONSerializer, "_serialize_type_structure", spy)
    fixed, _ = _serializers()
    fixed.serialize({"Item": {"PK": {"S": "S#t#s"}, "n": {"N": "1"}, "m": {"M": {"l": {"L": [{"BOOL": True}]}}}}})
    assert "AttributeValue" not in walked
    fixed.serialize({"Item": {"blob": {"B": b"\x00"}}})
    assert "AttributeValue" in walked  # binary still goes through moto's own path


# ----------------------------------------------------------------------------- CloudFormation (fixes 9-15)


def _stack(resources: dict[str, Any], outputs: dict[str, Any] | None = None,
           conditions: dict[str, Any] | None = None) -> tuple[Any, dict[str, str], dict[str, str]]:
    """Create a template on moto's CloudFormation: (client, logical -> physical id, outputs)."""
    import json

    cfn = boto3.client("cloudformation", region_name="us-east-1")
    body: dict[str, Any] = {"Resources": resources, "Outputs": outputs or {}, "Conditions": conditions or {}}
    cfn.create_stack(StackName="fx", TemplateBody=json.dumps(body), Capabilities=["CAPABILITY_IAM"])
    res = cfn.describe_stack_resources(StackName="fx")["StackResources"]
    outs = cfn.describe_stacks(StackName="fx")["Stacks"][0].get("Outputs", [])
    return (cfn, {r["LogicalResourceId"]: r.get("PhysicalResourceId", "") for r in res},
            {o["OutputKey"]: o["OutputValue"] for o in outs})


def test_cfn_a_fifo_queue_it_names_itself_ends_in_fifo(aws: dict[str, str]) -> None:
    _, res, _ = _stack({"Q": {"Type": "AWS::SQS::Queue", "Properties": {"FifoQueue": True}}})
    assert res["Q"].endswith(".fifo") and "-Q-" in res["Q"]


def test_cfn_creates_a_secret_it_generates(aws: dict[str, str]) -> None:
    _, res, outs = _stack({"S": {"Type": "AWS::SecretsManager::Secret", "Properties": {
        "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True}}}},
        {"Arn": {"Value": {"Ref": "S"}}})
    value = boto3.client("secretsmanager", region_name="us-east-1").get_secret_value(SecretId=outs["Arn"])
    assert outs["Arn"] == res["S"] and outs["Arn"].startswith("arn:aws:secretsmanager:")
    assert len(value["SecretString"]) == 64 and value["SecretString"].isalnum()


def test_cfn_creates_an_http_api_from_its_body_with_its_lambda_authorizer_and_stage(aws: dict[str, str]) -> None:
    uri = ("arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/"
           "arn:aws:lambda:us-east-1:1:function:{}/invocations")
    op = {"x-amazon-apigateway-integration": {"type": "aws_proxy", "httpMethod": "POST", "uri": uri.format("f"),
                                              "payloadFormatVersion": "2.0"}}
    body = {"openapi": "3.0.1", "info": {"title": "t"}, "paths": {
        "/a": {"get": {**op, "security": [{"Auth": []}]}}, "/b": {"get": {**op, "security": [{"NONE": []}]}}},
        "x-amazon-apigateway-cors": {"allowOrigins": ["https://x"], "maxAge": 600},
        "components": {"securitySchemes": {"Auth": {"type": "apiKey", "name": "Unused", "in": "header",
            "x-amazon-apigateway-authorizer": {"type": "request", "authorizerUri": uri.format("auth"),
                "identitySource": ["$request.header.Authorization"], "authorizerPayloadFormatVersion": "2.0",
                "enableSimpleResponses": True, "authorizerResultTtlInSeconds": 0}}}}}  # fmt: skip
    stage = {"ApiId": {"Ref": "Api"}, "StageName": "$default", "AutoDeploy": True}
    _, res, _ = _stack({"Api": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"Body": body}},
                        "Stage": {"Type": "AWS::ApiGatewayV2::Stage", "Properties": stage}})
    api = boto3.client("apigatewayv2", region_name="us-east-1")
    routes = {r["RouteKey"]: r for r in api.get_routes(ApiId=res["Api"])["Items"]}
    assert routes["GET /b"]["AuthorizationType"] == "NONE"
    assert routes["GET /a"]["AuthorizationType"] == "CUSTOM"
    auth = api.get_authorizer(ApiId=res["Api"], AuthorizerId=routes["GET /a"]["AuthorizerId"])
    assert auth["AuthorizerUri"] == uri.format("auth") and auth["IdentitySource"] == ["$request.header.Authorization"]
    assert api.get_api(ApiId=res["Api"])["CorsConfiguration"]["AllowOrigins"] == ["https://x"]
    assert api.get_stage(ApiId=res["Api"], StageName="$default")["AutoDeploy"] is True


def test_cfn_creates_a_bucket_policy_and_an_alarm(aws: dict[str, str]) -> None:
    import json

    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:*",
                                                      "Resource": {"Fn::Sub": "${B.Arn}/*"}}]}
    _, res, _ = _stack({
        "B": {"Type": "AWS::S3::Bucket"},
        "P": {"Type": "AWS::S3::BucketPolicy", "Properties": {"Bucket": {"Ref": "B"}, "PolicyDocument": policy}},
        "A": {"Type": "AWS::CloudWatch::Alarm", "Properties": {
            "Namespace": "AWS/SQS", "MetricName": "M", "Dimensions": [{"Name": "QueueName", "Value": "q"}],
            "Statistic": "Maximum", "Period": 60, "EvaluationPeriods": 1, "Threshold": 0,
            "ComparisonOperator": "GreaterThanThreshold"}},
    })  # fmt: skip
    stored = json.loads(boto3.client("s3", region_name="us-east-1").get_bucket_policy(Bucket=res["B"])["Policy"])
    assert stored["Statement"][0]["Resource"] == f"arn:aws:s3:::{res['B']}/*"
    alarms = boto3.client("cloudwatch", region_name="us-east-1").describe_alarms(AlarmNames=[res["A"]])["MetricAlarms"]
    assert [a["Dimensions"] for a in alarms] == [[{"Name": "QueueName", "Value": "q"}]]


def _function(name: str) -> None:
    import io
    import zipfile

    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="code")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("app.py", "")
    s3.put_object(Bucket="code", Key="f", Body=buf.getvalue())
    trust = ('{"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},'
             ' "Action": "sts:AssumeRole"}]}')
    role = boto3.client("iam", region_name="us-east-1").create_role(RoleName="r", AssumeRolePolicyDocument=trust)
    boto3.client("lambda", region_name="us-east-1").create_function(
        FunctionName=name, Runtime="python3.11", Role=role["Role"]["Arn"], Handler="app.handler",
        Code={"S3Bucket": "code", "S3Key": "f"})


def test_cfn_an_event_source_mapping_is_recorded_but_not_run_by_moto(aws: dict[str, str]) -> None:
    from moto.sqs.models import sqs_backends

    _function("fn")
    sqs, lam = boto3.client("sqs", region_name="us-east-1"), boto3.client("lambda", region_name="us-east-1")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    lam.create_event_source_mapping(EventSourceArn=arn, FunctionName="fn", BatchSize=5)
    assert [m["BatchSize"] for m in lam.list_event_source_mappings()["EventSourceMappings"]] == [5]
    assert sqs_backends["123456789012"]["us-east-1"].queues["q"].lambda_event_source_mappings == {}


def test_cfn_no_value_in_a_list_removes_the_element(aws: dict[str, str]) -> None:
    doc = {"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    _, res, _ = _stack({"R": {"Type": "AWS::IAM::Role", "Properties": {
        "AssumeRolePolicyDocument": doc,
        "Policies": [{"Fn::If": ["Off", {"PolicyName": "p", "PolicyDocument": doc}, {"Ref": "AWS::NoValue"}]}]}}},
        conditions={"Off": {"Fn::Equals": ["a", "b"]}})  # fmt: skip
    assert boto3.client("iam", region_name="us-east-1").list_role_policies(RoleName=res["R"])["PolicyNames"] == []


def test_cfn_ref_to_an_event_bus_is_its_name_and_to_a_layer_version_its_arn(aws: dict[str, str]) -> None:
    _function("unused")
    _, _, outs = _stack({
        "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "b"}},
        "L": {"Type": "AWS::Lambda::LayerVersion", "Properties": {"Content": {"S3Bucket": "code", "S3Key": "f"}}},
    }, {"Bus": {"Value": {"Ref": "Bus"}}, "Layer": {"Value": {"Ref": "L"}}})  # fmt: skip
    assert outs["Bus"] == "b"
    assert outs["Layer"].startswith("arn:aws:lambda:us-east-1:123456789012:layer:") and outs["Layer"].endswith(":1")


def test_cfn_a_state_machine_gets_its_definition_substitutions_and_type(aws: dict[str, str]) -> None:
    definition = '{"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "${Value}", "End": true}}}'
    _, res, _ = _stack({"M": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
        "DefinitionString": definition, "DefinitionSubstitutions": {"Value": "v"}, "StateMachineType": "EXPRESS",
        "RoleArn": "arn:aws:iam::123456789012:role/r"}}})  # fmt: skip
    described = boto3.client("stepfunctions", region_name="us-east-1").describe_state_machine(stateMachineArn=res["M"])
    assert '"Result": "v"' in described["definition"] and described["type"] == "EXPRESS"


def test_cfn_a_table_gets_its_ttl_and_point_in_time_recovery(aws: dict[str, str]) -> None:
    _, res, _ = _stack({"T": {"Type": "AWS::DynamoDB::Table", "Properties": {
        "BillingMode": "PAY_PER_REQUEST", "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
        "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}}})  # fmt: skip
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    assert ddb.describe_time_to_live(TableName=res["T"])["TimeToLiveDescription"]["AttributeName"] == "ttl"
    backups = ddb.describe_continuous_backups(TableName=res["T"])["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"


def test_cfn_creates_a_schedule_group_a_schedule_can_go_in(aws: dict[str, str]) -> None:
    """Fix 22: stock moto's CloudFormation has no AWS::Scheduler::ScheduleGroup (the Ref had no value)."""
    _, res, outs = _stack({"G": {"Type": "AWS::Scheduler::ScheduleGroup", "Properties": {"Name": "fx-timers"}}},
                          {"Name": {"Value": {"Ref": "G"}}, "Arn": {"Value": {"Fn::GetAtt": ["G", "Arn"]}}})
    assert res["G"] == outs["Name"] == "fx-timers"
    assert outs["Arn"].endswith(":schedule-group/fx-timers")
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    scheduler.create_schedule(Name="n", GroupName="fx-timers", ScheduleExpression="at(2030-01-01T00:00:00)",
                              FlexibleTimeWindow={"Mode": "OFF"}, Target={"Arn": "arn:aws:sqs:us-east-1:1:q",
                                                                          "RoleArn": "arn:aws:iam::1:role/r"})
    assert scheduler.get_schedule(Name="n", GroupName="fx-timers")["GroupName"] == "fx-timers"


def test_sfn_a_task_token_takes_one_answer(aws: dict[str, str]) -> None:
    """Fix 27: a second answer to a token whose task has its answer is refused (TaskTimedOut), also
    before the execution's thread has read the first; stock moto took both while the execution ran."""
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackNotifyConsumerError,
        CallbackOutcomeSuccess,
        CallbackPoolManager,
    )

    pool = CallbackPoolManager(activity_store={})
    pool.add("token-1")
    assert pool.notify("token-1", CallbackOutcomeSuccess(callback_id="token-1", output="{}")) is True
    with pytest.raises(CallbackNotifyConsumerError):
        pool.notify("token-1", CallbackOutcomeSuccess(callback_id="token-1", output="{}"))
    assert pool.notify("token-2", CallbackOutcomeSuccess(callback_id="token-2", output="{}")) is False  # unknown


def test_sfn_a_task_failure_keeps_its_cause(aws: dict[str, str], monkeypatch: Any) -> None:
    """Fix 28: SendTaskFailure hands its cause to the execution with its error; stock moto dropped
    the cause (tests/e2e/test_runs_e2e.py reads it from a real execution's history)."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    seen: dict[str, Any] = {}

    def record(self: Any, task_token: str, error: str | None = None, cause: str | None = None) -> None:
        seen.update(token=task_token, error=error, cause=cause)

    monkeypatch.setattr(StepFunctionsParserBackend, "send_task_failure", record)
    monkeypatch.setattr("moto.stepfunctions.responses.get_backend", lambda account, region: StepFunctionsParserBackend(
        region, account))  # the executing backend, as the local stack's moto server runs it
    boto3.client("stepfunctions").send_task_failure(taskToken="tok", error="Holdpoint.Denied", cause='{"why":1}')
    assert seen == {"token": "tok", "error": "Holdpoint.Denied", "cause": '{"why":1}'}


def test_local_control_caps_open_executions_at_the_configured_number(aws: dict[str, str], monkeypatch: Any) -> None:
    """Not a fix: the local-only cap (CAP_KEY) stands in for Step Functions' open-execution ceiling."""
    from botocore.exceptions import ClientError
    from moto.core.config import default_user_config

    from holdpoint_local.moto.stepfunctions import CAP_KEY

    sfn, arn = boto3.client("stepfunctions"), aws["PARK_STATE_MACHINE_ARN"]
    monkeypatch.setitem(default_user_config, "stepfunctions", {CAP_KEY: 1})  # type: ignore[arg-type]
    sfn.start_execution(stateMachineArn=arn, name="one", input="{}")
    with pytest.raises(ClientError) as refused:
        sfn.start_execution(stateMachineArn=arn, name="two", input="{}")
    assert refused.value.response["Error"]["Code"] == "ExecutionLimitExceeded"
    sfn.start_execution(stateMachineArn=arn, name="one", input="{}")  # an idempotent retry is not refused
    monkeypatch.setitem(default_user_config, "stepfunctions", {})  # type: ignore[arg-type]
    sfn.start_execution(stateMachineArn=arn, name="two", input="{}")


def test_cfn_creates_a_websocket_api_with_its_routes_integration_and_authorizer(aws: dict[str, str]) -> None:
    uri = ("arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/"
           "arn:aws:lambda:us-east-1:1:function:{}/invocations")
    ws = {"Ref": "Ws"}
    target = {"Fn::Join": ["/", ["integrations", {"Ref": "Int"}]]}
    _, res, _ = _stack({
        "Ws": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {
            "Name": "live", "ProtocolType": "WEBSOCKET", "RouteSelectionExpression": "$request.body.action"}},
        "Auth": {"Type": "AWS::ApiGatewayV2::Authorizer", "Properties": {
            "ApiId": ws, "Name": "A", "AuthorizerType": "REQUEST", "AuthorizerUri": uri.format("auth")}},
        "Int": {"Type": "AWS::ApiGatewayV2::Integration", "Properties": {
            "ApiId": ws, "IntegrationType": "AWS_PROXY", "IntegrationUri": uri.format("live")}},
        "Connect": {"Type": "AWS::ApiGatewayV2::Route", "Properties": {
            "ApiId": ws, "RouteKey": "$connect", "AuthorizationType": "CUSTOM", "AuthorizerId": {"Ref": "Auth"},
            "Target": target}},
        "Sub": {"Type": "AWS::ApiGatewayV2::Route", "Properties": {
            "ApiId": ws, "RouteKey": "subscribe", "AuthorizationType": "NONE", "Target": target}},
    })
    api = boto3.client("apigatewayv2", region_name="us-east-1")
    got = api.get_api(ApiId=res["Ws"])
    assert got["ProtocolType"] == "WEBSOCKET" and got["RouteSelectionExpression"] == "$request.body.action"
    routes = {r["RouteKey"]: r for r in api.get_routes(ApiId=res["Ws"])["Items"]}
    assert set(routes) == {"$connect", "subscribe"}
    assert routes["$connect"]["AuthorizationType"] == "CUSTOM" and routes["$connect"]["AuthorizerId"] == res["Auth"]
    assert routes["subscribe"]["Target"] == f"integrations/{res['Int']}"
    assert api.get_integration(ApiId=res["Ws"], IntegrationId=res["Int"])["IntegrationUri"] == uri.format("live")
    assert api.get_authorizer(ApiId=res["Ws"], AuthorizerId=res["Auth"])["AuthorizerUri"] == uri.format("auth")


def test_moto_item_count_is_what_a_count_scan_gives(aws: dict[str, str]) -> None:
    """tests/tables.py's two counts of what a table holds agree: moto's own (the unit tier's
    'nothing recorded' checks) and a paged COUNT scan (the end-to-end tier's)."""
    ddb, name = table(aws)
    counts = [(moto_item_count(name), count_items(ddb, name))]
    for sk in ("a", "b", "c"):
        ddb.put_item(TableName=name, Item=key(sk))
    counts.append((moto_item_count(name), count_items(ddb, name)))
    ddb.delete_item(TableName=name, Key=key("b"))
    counts.append((moto_item_count(name), count_items(ddb, name)))
    assert counts == [(0, 0), (3, 3), (2, 2)]


def _segment(trace_id: str, seg_id: str, annotations: dict[str, Any]) -> str:
    now = time.time()
    return json.dumps({"name": "hop", "id": seg_id, "trace_id": trace_id, "start_time": now - 1,
                       "end_time": now - 0.5, "annotations": annotations})


def test_xray_trace_summaries_filter_on_annotations(aws: dict[str, str]) -> None:
    """Fix 25: a FilterExpression of annotation terms finds the traces that carry them (stock moto
    answers 500 "Not implemented yet"), and each summary lists its annotations."""
    xray = boto3.client("xray", region_name="us-east-1")
    xray.put_trace_segments(TraceSegmentDocuments=[
        _segment("1-5759e988-bd862e3fe1be46a994272793", "a1b2c3d4e5f60718", {"session_id": "s1", "tenant": "t"}),
        _segment("1-5759e988-bd862e3fe1be46a994272794", "a1b2c3d4e5f60719", {"session_id": "s2", "tenant": "t"}),
    ])
    window = {"StartTime": time.time() - 60, "EndTime": time.time() + 60}
    both = 'annotation.session_id = "s1" AND annotation.tenant = "t"'
    found = xray.get_trace_summaries(**window, FilterExpression=both)
    assert [s["Id"] for s in found["TraceSummaries"]] == ["1-5759e988-bd862e3fe1be46a994272793"]
    assert found["TraceSummaries"][0]["Annotations"]["session_id"] == [{"AnnotationValue": {"StringValue": "s1"}}]
    assert xray.get_trace_summaries(**window, FilterExpression='annotation.session_id = "none"')["TraceSummaries"] == []
    with pytest.raises(ClientError):  # what the fix does not parse is still moto's refusal
        xray.get_trace_summaries(**window, FilterExpression="responsetime > 5")


def test_lambda_durable_callbacks_reach_the_durable_execution_emulator(aws: dict[str, str],
                                                                      monkeypatch: Any) -> None:
    """Fix 29: a durable function's callback completed through Lambda's API reaches the durable
    execution emulator that runs it (AWS's own), and a spent or unknown one is refused as Lambda
    refuses it, its type named; stock moto had no such route."""
    from aws_durable_execution_sdk_python import DurableContext, durable_execution
    from moto.core.config import default_user_config

    from holdpoint.bridges.runs.channels import SPENT
    from holdpoint_local.moto.awslambda import ENDPOINT_KEY
    from tests.durable import DurableHost

    def waits(event: Any, context: DurableContext) -> Any:
        return context.wait_for_callback(lambda callback_id, _: None, name="approval")

    host = DurableHost(durable_execution(waits))
    threading.Thread(target=host.server.serve_forever, daemon=True).start()
    lam = boto3.client("lambda", region_name="us-east-1")
    try:
        monkeypatch.setitem(default_user_config, "lambda", {ENDPOINT_KEY: host.url})
        arn = host.start("{}", "fix-29")

        def started() -> str | None:
            events = host.runner.get_execution_history(arn).events
            found = [e.callback_started_details for e in events if e.callback_started_details]
            return found[0].callback_id if found else None

        callback_id = wait_for(started, "the function to wait on its callback")
        lam.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'"approved"')
        assert json.loads(host.runner.wait_for_result(arn, timeout=30).result) == '"approved"'  # as sent
        with pytest.raises(ClientError) as again:
            lam.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'"again"')
        assert again.value.response["Error"]["Code"] in SPENT
        monkeypatch.setitem(default_user_config, "lambda", {})
        with pytest.raises(ClientError) as unknown:
            lam.send_durable_execution_callback_failure(CallbackId=callback_id, Error={"ErrorType": "x"})
        assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"
    finally:
        host.server.shutdown()
        host.runner.close()


class LambdaEndpointProbe:
    """Where fix 30 hands an invoke: records each request (its path, invocation type and body) and
    answers as `sam local start-lambda` does (202 for an Event invoke, else the function's output)."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.seen: list[tuple[str, str, bytes]] = []
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                kind = self.headers.get("X-Amz-Invocation-Type", "RequestResponse")
                seen.append((self.path, kind, self.rfile.read(int(self.headers.get("Content-Length") or 0))))
                out = b"" if kind == "Event" else b'{"errorMessage": "no", "errorType": "Refused"}'
                self.send_response(202 if kind == "Event" else 200)
                if kind != "Event":
                    self.send_header("X-Amz-Function-Error", "Unhandled")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def test_lambda_invoke_runs_where_the_functions_run(aws: dict[str, str], monkeypatch: Any) -> None:
    """Fix 30: an invoke goes to the Lambda Invoke API the local stack runs functions behind (SAM
    CLI's start-lambda), by the function's name, its invocation type kept, and its answer (a 202,
    or the function's output and error) comes back as Lambda's; stock moto ran it in a container of
    a registry's image."""
    from moto.core.config import default_user_config

    from holdpoint_local.moto.awslambda import INVOKE_KEY

    probe = LambdaEndpointProbe()
    lam = boto3.client("lambda", region_name="us-east-1")
    try:
        monkeypatch.setitem(default_user_config, "lambda", {INVOKE_KEY: probe.url})
        arn = "arn:aws:lambda:us-east-1:123456789012:function:customer-a"
        assert lam.invoke(FunctionName=arn, InvocationType="Event", Payload=b'{"n": 1}')["StatusCode"] == 202
        answered = lam.invoke(FunctionName="customer-a", Payload=b"{}")
        assert answered["FunctionError"] == "Unhandled" and b"Refused" in answered["Payload"].read()
        assert probe.seen == [("/2015-03-31/functions/customer-a/invocations", "Event", b'{"n": 1}'),
                              ("/2015-03-31/functions/customer-a/invocations", "RequestResponse", b"{}")]
    finally:
        probe.server.shutdown()


def test_cfn_a_receipt_kms_key_gets_its_key_spec_and_usage_and_signs(aws: dict[str, str]) -> None:
    """Fix 31: moto's CloudFormation made every KMS key SYMMETRIC_DEFAULT ENCRYPT_DECRYPT, so the
    approval receipts' key (template.yaml's ReceiptKey) could not sign."""
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "kms:*", "Resource": "*",
                                                      "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}
    _, res, outs = _stack({"K": {"Type": "AWS::KMS::Key", "Properties": {
        "KeySpec": "ECC_NIST_P256", "KeyUsage": "SIGN_VERIFY", "KeyPolicy": policy}}},
        {"Arn": {"Value": {"Fn::GetAtt": ["K", "Arn"]}}})
    kms = boto3.client("kms", region_name="us-east-1")
    meta = kms.describe_key(KeyId=res["K"])["KeyMetadata"]
    assert (meta["KeySpec"], meta["KeyUsage"], meta["Arn"]) == ("ECC_NIST_P256", "SIGN_VERIFY", outs["Arn"])
    signed = kms.sign(KeyId=res["K"], Message=b"m", MessageType="RAW", SigningAlgorithm="ECDSA_SHA_256")
    assert kms.verify(KeyId=res["K"], Message=b"m", MessageType="RAW", Signature=signed["Signature"],
                      SigningAlgorithm="ECDSA_SHA_256")["SignatureValid"]


def test_email_channel_cfn_creates_a_verified_ses_email_identity_that_sends(aws: dict[str, str]) -> None:
    """Fix 32: stock moto's CloudFormation has no AWS::SES::EmailIdentity (the identity was never
    made, so SendEmail from the stack's sender was MessageRejected)."""
    _, res, outs = _stack({"E": {"Type": "AWS::SES::EmailIdentity",
                                 "Properties": {"EmailIdentity": "sender@fx.example"}}},
                          {"Name": {"Value": {"Ref": "E"}}})
    assert res["E"] == outs["Name"] == "sender@fx.example"
    ses = boto3.client("sesv2", region_name="us-east-1")
    assert ses.get_email_identity(EmailIdentity="sender@fx.example")["VerifiedForSendingStatus"] is True
    sent = ses.send_email(FromEmailAddress="sender@fx.example", Destination={"ToAddresses": ["a@fx.example"]},
                          Content={"Simple": {"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "t"}}}})
    assert sent["MessageId"]


def test_email_channel_moto_api_data_lists_what_ses_sent_beside_a_lambda(aws: dict[str, str],
                                                                        monkeypatch: Any) -> None:
    """Fix 34: stock moto's `/moto-api/data.json` read a Lambda function's `docker_client`, which
    raises without Docker, so the whole answer was a 500 and SES's sent messages could not be read."""
    import docker
    from moto.moto_api._internal.responses import MotoAPIResponse

    def no_docker(*_: Any, **__: Any) -> Any:
        raise docker.errors.DockerException("no Docker here")

    monkeypatch.setattr(docker, "from_env", no_docker)
    role = boto3.client("iam").create_role(RoleName="fx-fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    boto3.client("lambda").create_function(FunctionName="fx-fn", Runtime="python3.13", Role=role,
                                           Handler="app.handler", Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18})
    ses = boto3.client("sesv2")
    ses.create_email_identity(EmailIdentity="sender@fx.example")
    ses.send_email(FromEmailAddress="sender@fx.example", Destination={"ToAddresses": ["fx-data@fx.example"]},
                   Content={"Simple": {"Subject": {"Data": "s"}, "Body": {"Html": {"Data": "<p>b</p>"}}}})
    status, _, body = MotoAPIResponse().model_data(None, "http://motoapi.amazonaws.com/moto-api/data.json", {})
    assert status == 200
    messages = json.loads(body)["ses"]["Message"]
    assert [m["body"] for m in messages if m["destinations"]["ToAddresses"] == ["fx-data@fx.example"]] == ["<p>b</p>"]
    status, _, body = MotoAPIResponse().model_data(None, "http://motoapi.amazonaws.com/moto-api/data.json"
                                                   "?service=ses", {})
    assert status == 200 and list(json.loads(body)) == ["ses"]  # one service's models, not every one


def test_email_channel_ses_a_two_part_message_keeps_its_text_part(aws: dict[str, str]) -> None:
    """Fix 35: stock moto kept only the HTML part of a two-part SES v2 message, so the text part
    sent could not be read back."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    ses = boto3.client("sesv2")
    ses.create_email_identity(EmailIdentity="sender@fx.example")
    sent = ses.send_email(FromEmailAddress="sender@fx.example", Destination={"ToAddresses": ["t@fx.example"]},
                          Content={"Simple": {"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "plain"},
                                                                                 "Html": {"Data": "<p>h</p>"}}}})
    [message] = [m for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages if m.id == sent["MessageId"]]
    assert (message.body, message.text) == ("<p>h</p>", "plain")
