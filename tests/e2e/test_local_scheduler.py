"""The local stack's EventBridge Scheduler (holdpoint_local/emulators/scheduler.py): moto stores schedules but
never fires them, so the local stack sends each one-time schedule when it is due, as Scheduler sends
to an SQS FIFO target (its Input, its MessageGroupId, the queue deduplicating on content), and
deletes it after (ActionAfterCompletion DELETE). Here on its own group and queue on the moto server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from holdpoint.aws.errors import Refused
from holdpoint.aws.queue import group_id
from holdpoint.aws.timers import Timers, schedule_name
from holdpoint.core.messages import Kick, parse
from holdpoint_local import REGION
from holdpoint_local.emulators.scheduler import SchedulerFirer
from holdpoint_local.moto.server import MotoServer
from tests.waiting import wait_for


def client(moto: MotoServer, service: str) -> Any:
    return boto3.client(service, endpoint_url=moto.endpoint, region_name=REGION,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def firer(moto_server: MotoServer, stack_name: str) -> Iterator[tuple[SchedulerFirer, Timers, str]]:
    sqs, scheduler = client(moto_server, "sqs"), client(moto_server, "scheduler")
    url = sqs.create_queue(QueueName=f"{stack_name}.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    scheduler.create_schedule_group(Name=stack_name)
    firing = SchedulerFirer(moto_server.endpoint, stack_name).start()
    yield firing, Timers(stack_name, arn, "arn:aws:iam::123456789012:role/timers", client=scheduler), url
    firing.stop()


def test_local_scheduler_fires_a_timer_once_at_or_after_its_time_and_deletes_it(
        firer: tuple[SchedulerFirer, Timers, str], moto_server: MotoServer) -> None:
    firing, timers, url = firer
    sqs = client(moto_server, "sqs")
    timers.schedule(300, Kick("t1", "s-1"), "later")  # not due: left alone
    [later] = timers.pending()
    assert later.seconds == 300
    timers.schedule(1, Kick("t1", "s-1"), "retry/1")
    timers.schedule(1, Kick("t1", "s-1"), "retry/1")  # the same timer again: a no-op (ConflictException)
    due_name = schedule_name("t1", "s-1", "retry/1")  # (on a loaded machine it may fire before a listing)

    def received() -> list[dict[str, Any]]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                  MessageSystemAttributeNames=["All"]).get("Messages", [])
        return list(got)

    [message] = wait_for(received, "the timer's message on its queue", timeout=30)
    assert parse(json.loads(message["Body"])) == Kick("t1", "s-1")
    assert message["Attributes"]["MessageGroupId"] == group_id("t1", "s-1")
    [due] = wait_for(lambda: list(firing.fired) or None, "the firer to note what it sent")  # noted after the send
    assert due.name == due_name and firing.fired_at[due.name] >= due.due
    # Deleted after it fired (the delete follows the send, so wait for it).
    wait_for(lambda: [t.name for t in timers.pending()] == [later.name], "the fired schedule deleted", timeout=30)
    with pytest.raises(Refused, match="ResourceNotFoundException"):  # Holdpoint's client's refusal
        timers.client.get_schedule(Name=due.name, GroupName=timers.group)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    firing.fire_due()  # a look after it fired sends nothing more
    assert received() == [] and len(firing.fired) == 1
