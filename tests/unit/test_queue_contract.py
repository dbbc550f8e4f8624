"""The `ports.WorkQueue` and `ports.ParkQueue` contract (docs/ARCHITECTURE.md, "Parking"), held by
the SQS FIFO work queue on moto (aws/queue.py) and its in-memory twin (`MemoryQueue`,
memory/ports.py): one kick per session version, one wake per interrupt generation and one
expiry per generation, however often each is sent; a session's messages come off in the order
sent, each as the engine parses it.

On moto the queue is a FIFO queue made here without content-based deduplication, so a message
is deduplicated by the id the adapter gives it or refused for having none; the adapter finds it
as deployed, by `WORK_QUEUE_URL`. Every message is sent before any is read: moto forgets a
deduplication id once its message is deleted, SQS only after five minutes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from holdpoint.aws.queue import parse_message
from holdpoint.core.messages import Kick, Wake, WakeOutcome, WorkMessage
from holdpoint.core.state import derive
from holdpoint_local.memory.ports import MemoryQueue
from tests.twins import side

Read = Callable[[], list[WorkMessage]]


def _in_memory() -> tuple[Any, Read]:
    memory = MemoryQueue()
    return memory, lambda: list(memory.sent)


def _drained(url: str) -> list[WorkMessage]:
    """Every message on the queue, in the order received, each deleted once read."""
    sqs, got = boto3.client("sqs"), []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            got.append(parse_message(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return got


@pytest.fixture(params=["memory", "sqs"])
def queue(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Read]:
    """A work queue of one kind, and what has come off it."""

    def on_sqs() -> tuple[Any, Read]:
        from holdpoint.aws.queue import WorkQueue

        url = boto3.client("sqs").create_queue(QueueName="contract.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        monkeypatch.setenv("WORK_QUEUE_URL", url)
        return WorkQueue(), lambda: _drained(url)

    return side(request, _in_memory, on_sqs)


def key(tenant: str, session_id: str, interrupt_id: str, generation: int) -> str:
    """The interrupt's `dedup_key`, as `core.interrupts` derives it for a raise."""
    return derive("park", tenant, session_id, interrupt_id, generation)[5:]


def of(messages: list[WorkMessage], tenant: str, session_id: str) -> list[WorkMessage]:
    """One session's messages (one FIFO group), in the order they came off."""
    return [m for m in messages if (m.tenant, m.session_id) == (tenant, session_id)]


def test_queue_one_kick_per_session_version(queue: tuple[Any, Read]) -> None:
    sent, read = queue
    for _ in range(3):
        sent.kick("t1", "s1", 1)
    sent.kick("t1", "s1", 2)
    sent.kick("t1", "s2", 1)
    sent.kick("t2", "s1", 1)
    got = read()
    assert of(got, "t1", "s1") == [Kick("t1", "s1")] * 2 and len(got) == 4
    assert of(got, "t1", "s2") == [Kick("t1", "s2")] and of(got, "t2", "s1") == [Kick("t2", "s1")]


@pytest.mark.parametrize("outcome", ["resumed", "expired"])
def test_queue_one_wake_and_one_expiry_per_interrupt_generation(queue: tuple[Any, Read], outcome: WakeOutcome) -> None:
    sent, read = queue
    send = sent.wake if outcome == "resumed" else sent.expire
    for _ in range(2):
        send("t1", "s1", "i1", key("t1", "s1", "i1", 0), 0)
    send("t1", "s1", "i1", key("t1", "s1", "i1", 1), 1)
    send("t1", "s1", "i2", key("t1", "s1", "i2", 0), 0)
    assert read() == [Wake("t1", "s1", "i1", outcome, 0), Wake("t1", "s1", "i1", outcome, 1),
                      Wake("t1", "s1", "i2", outcome, 0)]


def test_queue_the_expiry_and_the_wake_of_one_generation_are_two_messages(queue: tuple[Any, Read]) -> None:
    sent, read = queue
    sent.expire("t1", "s1", "i1", key("t1", "s1", "i1", 0), 0)
    sent.wake("t1", "s1", "i1", key("t1", "s1", "i1", 0), 0)
    assert read() == [Wake("t1", "s1", "i1", "expired", 0), Wake("t1", "s1", "i1", "resumed", 0)]


def test_queue_a_sessions_messages_come_off_in_the_order_sent(queue: tuple[Any, Read]) -> None:
    sent, read = queue
    sent.kick("t1", "s1", 1)
    sent.wake("t1", "s1", "i1", key("t1", "s1", "i1", 0), 0)
    sent.kick("t1", "s1", 2)
    sent.expire("t1", "s1", "i2", key("t1", "s1", "i2", 0), 0)
    sent.kick("t1", "s1", 1)  # a repeat of the first: nothing more
    assert read() == [Kick("t1", "s1"), Wake("t1", "s1", "i1", "resumed", 0), Kick("t1", "s1"),
                      Wake("t1", "s1", "i2", "expired", 0)]
