"""The emulator fixes in holdpoint_local.moto_fixes: conditional writes stay atomic under
concurrent requests, a cancelled transaction leaves every item as it was, and a FIFO message
group is in flight with one receiver at a time."""

from __future__ import annotations

import copy
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

from holdpoint_local import moto_fixes

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
    from holdpoint_local import moto_fixes

    monkeypatch.setattr(moto_fixes, "STREAM_KEEP", 5)
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
    real_round, real_wait = moto_fixes._wait_round, Queue.wait_for_messages

    def hold(thread_waits: Callable[[], Any]) -> Any:
        if threading.current_thread().name == "waiter" and not go.is_set():
            held.set()
            go.wait(10)
        return thread_waits()

    monkeypatch.setattr(moto_fixes, "_wait_round", lambda queue, t: hold(lambda: real_round(queue, t)))
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
