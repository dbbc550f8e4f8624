"""Issue 22: parking past Step Functions' ceiling of open executions. A refused StartExecution
(`ExecutionLimitExceeded`, or a throttle) leaves the interrupt open and answerable in the table and
sets a `ParkRetry` timer (a Scheduler schedule, no execution); the retry starts the execution once
there is capacity, for what is left of the expiry, or carries the expiry out itself. The refusal
is moto's local-only cap on open executions (holdpoint_local/moto/stepfunctions.py, CAP_KEY), which the
in-process moto reads from its config like the moto server does. Over HTTP on the local stack:
tests/e2e/test_parking_capacity.py."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.timers import Scheduled, Timers
from holdpoint.core.interrupts import park_retry_seconds
from holdpoint.ports import ParkRecord
from holdpoint_local.moto.stepfunctions import CAP_KEY
from tests.harness import Harness

pytestmark = pytest.mark.usefixtures("aws")


@pytest.fixture
def cap(aws: dict[str, str]) -> Iterator[Any]:
    """Set the open-execution cap (None lifts it); lifted again after the test."""
    from moto.core.config import default_user_config

    saved = default_user_config.get("stepfunctions")

    def set_cap(value: int | None) -> None:
        config = dict(saved or {})
        if value is not None:
            config[CAP_KEY] = value
        default_user_config["stepfunctions"] = config  # type: ignore[typeddict-item]

    yield set_cap
    default_user_config["stepfunctions"] = saved  # type: ignore[typeddict-item]


def executions() -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions")
    return list(sfn.list_executions(stateMachineArn=os.environ["PARK_STATE_MACHINE_ARN"])["executions"])


def park_retries(h: Harness) -> list[Scheduled]:
    return [t for t in Timers().pending() if t.message["kind"] == "park_retry"
            and t.message["session_id"] == h.session_id]


def fire(h: Harness, timer: Scheduled, times: int = 2) -> None:
    """What Scheduler sends when the schedule is due; `times` > 1 plays a duplicate."""
    for _ in range(times):
        h.runner.handle(work_message(timer.message))  # type: ignore[arg-type]
    h.park_tokens()


def waiting(cap: Any, **agent: Any) -> tuple[Harness, str]:
    cap(0)
    h = Harness(agent=agent or None)
    h.say("Email Bob")
    return h, h.open_interrupt()["interrupt_id"]


def test_capacity_a_refused_park_leaves_the_interrupt_open_and_sets_a_retry_timer(cap: Any) -> None:
    h, iid = waiting(cap)
    interrupt = h.state().interrupts[iid]
    assert interrupt.status == "open" and h.record(iid) == ParkRecord(waits=1)
    assert executions() == []
    [retry] = park_retries(h)
    assert retry.seconds == park_retry_seconds(1, None) == 2
    assert retry.message["attempt"] == 1 and retry.after_completion == "DELETE"
    assert h.runner.counters.counts["parks_waiting_for_capacity"] == 1
    assert h.view()["status"] == "interrupted"
    # The step loop does not retry the park itself (it would spin): nothing more is due.
    h.settle()
    assert len(park_retries(h)) == 1 and h.runner.counters.counts["parks_waiting_for_capacity"] == 1
    # Another session is not held up by it.
    other = Harness()
    other.say("say hi")
    assert other.view()["status"] == "done"


def test_capacity_a_resume_before_any_execution_wakes_the_branch_exactly_once(cap: Any) -> None:
    h, iid = waiting(cap)
    out = h.resume(iid, {"approved": True})
    assert out.noop is False
    [retry] = park_retries(h)
    cap(None)
    fire(h, retry)  # the retry finds it answered: no execution, no second wake
    assert executions() == []
    assert len(h.triggers("interrupt.resumed")) == 1
    assert h.view()["messages"][-1]["content"] == "Email sent."


def test_capacity_the_retry_starts_the_execution_once_there_is_room(cap: Any) -> None:
    h, iid = waiting(cap)
    [first] = park_retries(h)
    fire(h, first, times=1)  # still no room: the next attempt waits longer
    second = [t for t in park_retries(h) if t.message["attempt"] == 2]
    assert [t.seconds for t in second] == [4]
    cap(None)
    fire(h, second[0])
    [execution] = executions()
    record = h.record(iid)
    assert record is not None and record.handle == execution["executionArn"] and h.token(iid)
    assert h.runner.counters.counts["parks_started_after_wait"] == 1
    fire(h, first)  # a stale attempt's timer changes nothing
    assert len(executions()) == 1
    h.resume(iid, {"approved": True})
    assert len(h.triggers("interrupt.resumed")) == 1
    assert h.view()["messages"][-1]["content"] == "Email sent."


def test_capacity_the_retry_starts_the_execution_for_what_is_left_of_the_expiry(cap: Any) -> None:
    h, _ = waiting(cap, interrupt_expires_in=600)
    [retry] = park_retries(h)
    cap(None)
    started = time.time()
    h.runner.clock = lambda: started + 100
    fire(h, retry, times=1)
    [execution] = executions()
    described = boto3.client("stepfunctions").describe_execution(executionArn=execution["executionArn"])
    assert 490 <= json.loads(described["input"])["timeout_seconds"] <= 500


def test_capacity_an_interrupt_past_its_expiry_without_an_execution_is_expired_by_its_retry(cap: Any) -> None:
    h, iid = waiting(cap, interrupt_expires_in=60, interrupt_on_expiry="deny")
    [retry] = park_retries(h)
    h.runner.clock = lambda: time.time() + 61
    fire(h, retry)
    sqs, url = boto3.client("sqs"), os.environ["WORK_QUEUE_URL"]
    bodies = [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    [expiry] = [b for b in bodies if b["kind"] == "wake"]
    assert (expiry["outcome"], expiry["interrupt_id"]) == ("expired", iid)
    h.runner.clock = time.time
    h.runner.handle(work_message(expiry))  # type: ignore[arg-type]
    assert h.view()["messages"][-1]["content"] == "I did not send it."
    assert executions() == []


def test_capacity_a_retry_is_never_later_than_the_expiry() -> None:
    assert [park_retry_seconds(n, None) for n in (1, 2, 3, 9, 20)] == [2, 4, 8, 300, 300]
    assert park_retry_seconds(9, 10.2) == 11 and park_retry_seconds(1, 0.1) == 1
