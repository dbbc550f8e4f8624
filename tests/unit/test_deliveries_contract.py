"""The `ports.Deliveries` and `ports.PostedMessages` contract (docs/NOTIFICATIONS.md), held by both:
the DynamoDB records on moto with the SQS dead-letter queue (aws/deliveries.py) and their in-memory
twin (memory/deliveries.py). A delivery starts once however often its stream record comes back
(N1), each retry runs once however often its timer fires, only the running attempt's outcome is
recorded, and a delivery out of attempts is dead-lettered (N4); the first message a chat channel
posted for an interrupt is the one kept (S1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from holdpoint.ports import DeliveryState, Posted
from holdpoint_local.memory.deliveries import MemoryDeliveries

DELIVERIES = ["memory", "dynamodb"]
RECORD = {"key": "evt_1#0", "tenant": "t1", "session_id": "s1", "channel": "notify.webhook",
          "entry": {"url": "https://hooks.example/a"}, "event": {"event_id": "evt_1"}, "policy": {"max_attempts": 3}}


@pytest.fixture(params=DELIVERIES)
def kept(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Callable[[], list[dict[str, Any]]]]]:
    """The deliveries of one kind, and what their dead-letter queue holds now."""
    if request.param == "memory":
        memory = MemoryDeliveries()
        yield memory, lambda: list(memory.dead)
        return
    request.getfixturevalue("aws")
    from holdpoint.aws.deliveries import DeliveryLog

    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="notify-dlq")["QueueUrl"]

    def letters() -> list[dict[str, Any]]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in got]

    yield DeliveryLog(dlq_url=url), letters


@pytest.fixture
def log(kept: tuple[Any, Callable[[], list[dict[str, Any]]]]) -> Any:
    return kept[0]


def test_n1_a_delivery_is_claimed_once_however_often_its_record_comes_back(log: Any) -> None:
    assert log.read("t1", "s1", "evt_1#0") is None
    assert log.claim("t1", "s1", "evt_1#0", RECORD) is True
    assert log.claim("t1", "s1", "evt_1#0", {**RECORD, "channel": "other"}) is False
    assert log.read("t1", "s1", "evt_1#0") == DeliveryState("sending", 1, None)
    assert log.claim("t1", "s1", "evt_1#1", RECORD) is True  # another entry of the event is its own
    assert log.claim("t1", "s2", "evt_1#0", RECORD) is True  # so is another session's
    assert log.claim("t2", "s1", "evt_1#0", RECORD) is True  # and another tenant's


def test_n1_a_delivered_attempt_is_recorded_and_begins_nothing_more(log: Any) -> None:
    log.claim("t1", "s1", "evt_1#0", RECORD)
    log.finish("t1", "s1", "evt_1#0", 1, "delivered")
    assert log.read("t1", "s1", "evt_1#0") == DeliveryState("delivered", 1, None)
    assert log.begin("t1", "s1", "evt_1#0", 2) is None
    assert log.waiting("t1", "s1", "evt_1#0") is None


def test_n4_each_retry_begins_once_from_the_attempt_before(log: Any) -> None:
    log.claim("t1", "s1", "evt_1#0", RECORD)
    assert log.begin("t1", "s1", "evt_1#0", 3) is None  # not from attempt 1
    log.finish("t1", "s1", "evt_1#0", 1, "retrying", "503")
    assert log.waiting("t1", "s1", "evt_1#0") == (RECORD, 1)
    assert log.begin("t1", "s1", "evt_1#0", 2) == RECORD
    assert log.begin("t1", "s1", "evt_1#0", 2) is None  # the timer fired twice: one attempt
    assert log.read("t1", "s1", "evt_1#0") == DeliveryState("sending", 2, "503")
    assert log.waiting("t1", "s1", "evt_1#0") is None
    assert log.begin("t1", "s1", "other", 2) is None  # a record that is not there


def test_n4_a_failure_recording_refused_still_lets_its_timer_begin_the_next(log: Any) -> None:
    """Only a failed attempt sets the timer that asks for the next, so a record still `sending`
    at the attempt before is moved on too."""
    log.claim("t1", "s1", "evt_1#0", RECORD)
    assert log.begin("t1", "s1", "evt_1#0", 2) == RECORD
    assert log.read("t1", "s1", "evt_1#0") == DeliveryState("sending", 2, None)


def test_n4_only_the_running_attempts_outcome_is_recorded(log: Any) -> None:
    log.claim("t1", "s1", "evt_1#0", RECORD)
    log.finish("t1", "s1", "evt_1#0", 1, "retrying", "timeout")
    log.begin("t1", "s1", "evt_1#0", 2)
    log.finish("t1", "s1", "evt_1#0", 1, "delivered")  # a late answer of attempt 1: moot
    assert log.read("t1", "s1", "evt_1#0") == DeliveryState("sending", 2, "timeout")
    log.finish("t1", "s1", "evt_1#0", 2, "dead", "410")
    log.finish("t1", "s1", "evt_1#0", 2, "delivered")  # the attempt is over: its outcome stands
    assert log.read("t1", "s1", "evt_1#0") == DeliveryState("dead", 2, "410")
    assert log.begin("t1", "s1", "evt_1#0", 3) is None


def test_n4_the_record_comes_back_as_it_was_claimed(log: Any) -> None:
    """A caller changing its copy after the claim changes nothing kept."""
    record = json.loads(json.dumps(RECORD))
    log.claim("t1", "s1", "evt_1#0", record)
    record["entry"]["url"] = "https://elsewhere.example"
    log.finish("t1", "s1", "evt_1#0", 1, "retrying", "503")
    assert log.begin("t1", "s1", "evt_1#0", 2) == RECORD


def test_n4_a_dead_letter_carries_the_delivery_its_error_and_attempts(
        kept: tuple[Any, Callable[[], list[dict[str, Any]]]]) -> None:
    log, letters = kept
    assert letters() == []
    log.dead_letter({**RECORD, "attempts": 3, "error": "503"})
    assert letters() == [{"kind": "notify.dead", **RECORD, "attempts": 3, "error": "503"}]


def test_s1_the_first_posted_message_kept_for_a_key_wins(log: Any) -> None:
    assert log.posted("t1", "s1", "int_1#0#0") is None
    log.keep_posted("t1", "s1", "int_1#0#0", Posted("C1", "1.1"))
    log.keep_posted("t1", "s1", "int_1#0#0", Posted("C2", "2.2"))  # a retried post
    assert log.posted("t1", "s1", "int_1#0#0") == Posted("C1", "1.1")
    assert log.posted("t1", "s1", "int_1#1#0") is None and log.posted("t2", "s1", "int_1#0#0") is None
    assert log.read("t1", "s1", "int_1#0#0") is None  # a posted message is no delivery record
