"""The local stack's DynamoDB Streams event source mapping (holdpoint_local.emulators.streams): the template's
mapping as provisioned, FilterCriteria as Lambda applies them, and which records a batch retries."""

from __future__ import annotations

import json

import pytest

from holdpoint_local.emulators.streams import failed_from, matches
from holdpoint_local.provision import load_template


def record(sk: str, etype: str | None, name: str = "INSERT", seq: str = "1",
           status: str | None = None) -> dict[str, object]:
    image: dict[str, object] = {"PK": {"S": "T#t#S#s"}, "SK": {"S": sk}}
    if etype is not None:
        image["etype"] = {"S": etype}
    if status is not None:
        image["status"] = {"S": status}
    return {"eventName": name, "dynamodb": {"NewImage": image, "SequenceNumber": seq}}


def test_the_template_filter_keeps_new_interrupt_events_and_changes_of_open_interrupts() -> None:
    notifier = load_template()["Resources"]["NotifierFunction"]["Properties"]["Events"]["Outbox"]["Properties"]
    patterns = [json.loads(f["Pattern"]) for f in notifier["FilterCriteria"]["Filters"]]

    def kept(rec: dict[str, object]) -> bool:
        return any(matches(p, rec) for p in patterns)

    assert kept(record("E#000000000003", "session.interrupted"))
    assert kept(record("E#000000000009", "session.interrupt_resumed"))
    assert kept(record("E#000000000011", "interrupt.reminded"))  # A5
    assert kept(record("E#000000000012", "interrupt.escalated"))
    assert not kept(record("E#000000000013", "interrupt.expired"))  # published from interrupt_resumed
    assert not kept(record("E#000000000004", "message.added"))
    assert not kept(record("I#int-1", None))  # a new interrupt item: its event item says it was raised
    assert not kept(record("E#000000000003", "session.interrupted", name="MODIFY"))
    assert kept(record("I#int-1", None, name="MODIFY", status="open"))  # perhaps an answer appended (A2)
    assert not kept(record("I#int-1", None, name="MODIFY", status="resolved"))
    assert not kept(record("T#turn-1", None, name="MODIFY", status="open"))
    assert notifier["BisectBatchOnFunctionError"] and notifier["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_an_operator_the_emulation_does_not_know_is_refused_not_guessed() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        matches({"eventName": [{"anything-but": "REMOVE"}]}, {"eventName": "INSERT"})


def test_a_batch_retries_from_its_first_reported_failure() -> None:
    batch = [record(f"E#{i}", "session.interrupted", seq=str(10 + i)) for i in range(4)]
    assert failed_from({"batchItemFailures": []}, batch) is None
    assert failed_from(None, batch) is None
    assert failed_from({"batchItemFailures": [{"itemIdentifier": "13"}, {"itemIdentifier": "11"}]}, batch) == 1
    assert failed_from({"batchItemFailures": [{"itemIdentifier": "99"}]}, batch) == 0  # unknown: the whole batch


class Flaky:
    """Stands in for a LocalFunction: raises on any batch holding a poison record, records the rest."""

    def __init__(self, poison: set[str]) -> None:
        self.poison, self.batches = poison, []  # type: ignore[var-annotated]

    def invoke(self, event: dict[str, list[dict[str, dict[str, str]]]]) -> None:
        seqs = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        self.batches.append(seqs)
        if self.poison & set(seqs):
            raise RuntimeError("poison")


def test_a_crashing_batch_is_halved_until_the_poison_record_is_alone_then_skipped() -> None:
    import threading

    from holdpoint_local.emulators.streams import StreamPoller
    from holdpoint_local.provision import StreamMapping

    mapping = StreamMapping("Table", "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x", "Fn", 10,
                            "TRIM_HORIZON", (), 1, True, True, None)
    fn = Flaky({"12"})
    poller = StreamPoller(mapping, fn, endpoint_url="http://127.0.0.1:9", stop_event=threading.Event())  # type: ignore[arg-type]
    batch = [record(f"E#{i}", "session.interrupted", seq=str(10 + i)) for i in range(4)]
    poller.deliver(batch)
    assert fn.batches[0] == ["10", "11", "12", "13"]
    assert ["10", "11"] in fn.batches and ["13"] in fn.batches  # the good records got through
    assert fn.batches.count(["12"]) == 2  # the poison alone: the first try and one retry, then given up
    assert poller.delivered == 3
