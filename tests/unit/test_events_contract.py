"""The `ports.EventPublisher` contract (docs/NOTIFICATIONS.md), held by the EventBridge bus on moto
(aws/events.py) and its in-memory twin (memory/events.py): what is published comes off the bus in
order with its detail as it was at the publish, and an entry the bus refuses raises
`DeliveryFailed` with nothing published.

On moto the bus routes every `source: holdpoint` event to an SQS queue through a rule, and the test
reads that queue, so an event published with another source would never arrive. A bus that does
not exist is no clause: moto raises `ResourceNotFoundException` for the whole call (`Refused`),
not a refused entry, and the twin has no bus name to miss."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from holdpoint.core.jsontypes import JsonObject
from holdpoint.ports import DeliveryFailed
from holdpoint_local.memory.events import MemoryEventBus
from tests.twins import side

DETAIL: JsonObject = {"event_id": "evt_1", "tenant": "t1", "links": {"approve": "https://a.example/l/1"},
                      "n": 3, "ratio": 0.5, "ok": True, "none": None, "text": "h\u00e9llo \u2713"}

Read = Callable[[], list[tuple[str, Any]]]


def bus_to_queue(bus_name: str, queue_name: str) -> str:
    """On moto: a bus whose rule sends every `source: holdpoint` event to a new queue; its URL."""
    events, sqs = boto3.client("events"), boto3.client("sqs")
    events.create_event_bus(Name=bus_name)
    url: str = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="holdpoint", EventBusName=bus_name, EventPattern=json.dumps({"source": ["holdpoint"]}))
    events.put_targets(Rule="holdpoint", EventBusName=bus_name, Targets=[{"Id": "queue", "Arn": arn}])
    return url


def _drained(url: str) -> Read:
    """Reading the queue: every event on it, in order, each deleted once read."""
    sqs = boto3.client("sqs")

    def read() -> list[tuple[str, Any]]:
        got: list[tuple[str, Any]] = []
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            for message in batch:
                event = json.loads(message["Body"])
                got.append((event["detail-type"], event["detail"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return got

    return read


def _in_memory() -> tuple[Any, Read]:
    memory = MemoryEventBus()
    return memory, lambda: list(memory.published)


def _on_eventbridge() -> tuple[Any, Read]:
    from holdpoint.aws.events import EventBus

    return EventBus(bus_name="contract"), _drained(bus_to_queue("contract", "contract-events"))


@pytest.fixture(params=["memory", "eventbridge"])
def bus(request: pytest.FixtureRequest) -> tuple[Any, Read]:
    """A bus of one kind, and what has come off it."""
    return side(request, _in_memory, _on_eventbridge)


def test_n1_published_events_come_off_the_bus_in_order_with_their_detail(bus: tuple[Any, Read]) -> None:
    publisher, published = bus
    publisher.publish("interrupt.raised", DETAIL)
    publisher.publish("interrupt.resolved", {"event_id": "evt_2", "nested": {"list": [1, "two", [3]]}})
    publisher.publish("interrupt.raised", {})
    assert published() == [("interrupt.raised", DETAIL),
                           ("interrupt.resolved", {"event_id": "evt_2", "nested": {"list": [1, "two", [3]]}}),
                           ("interrupt.raised", {})]


def test_n1_a_detail_changed_after_its_publish_is_published_as_it_was(bus: tuple[Any, Read]) -> None:
    publisher, published = bus
    detail = json.loads(json.dumps(DETAIL))
    publisher.publish("interrupt.raised", detail)
    detail["links"]["approve"] = "https://elsewhere.example"
    assert published() == [("interrupt.raised", DETAIL)]


def test_n1_an_entry_the_bus_refuses_raises_delivery_failed_and_publishes_nothing(bus: tuple[Any, Read]) -> None:
    publisher, published = bus
    with pytest.raises(DeliveryFailed, match="InvalidArgument"):
        publisher.publish("", DETAIL)
    publisher.publish("interrupt.expired", {"event_id": "evt_3"})
    assert published() == [("interrupt.expired", {"event_id": "evt_3"})]
