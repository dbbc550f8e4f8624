"""The `ports.Timers` contract (docs/CAPACITY.md, "Timers"), held by the EventBridge Scheduler timers
on moto (aws/timers.py) and their in-memory twin (`MemoryTimers`, memory/ports.py): one key of one
session is one timer however often it is asked for (the first ask's wait and message stand);
another key, or the same key of another session or tenant, is another timer; a timer holds its
message as the engine will parse it, due the whole seconds asked for.

On moto the test reads the deployment's schedule group back (ListSchedules, GetSchedule) on a
fixed clock; Scheduler's `at()` has whole seconds, so every wait here is whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from holdpoint.aws.queue import from_queue
from holdpoint.core.messages import Deadline, Kick, NotifyRetry, ParkRetry, Wake, WorkMessage
from holdpoint_local.memory.ports import MemoryTimers
from tests.twins import side

T0 = 1_800_000_000.0
Timer = tuple[float, WorkMessage]
"""A timer as both sides hold it: its wait in seconds, and its message."""
Read = Callable[[], list[Timer]]


def _in_memory() -> tuple[Any, Read]:
    memory = MemoryTimers()
    return memory, lambda: list(memory.scheduled.values())


def _schedules() -> list[Timer]:
    """The deployment's schedule group as Scheduler holds it: each timer's wait from T0 and message."""
    from holdpoint.aws.timers import NAME_FIELD, scheduled

    client, group = boto3.client("scheduler"), "holdpoint-timers"
    out: list[Timer] = []
    for item in client.list_schedules(GroupName=group)["Schedules"]:
        timer = scheduled(client.get_schedule(Name=item["Name"], GroupName=group))
        body = {k: v for k, v in timer.message.items() if k != NAME_FIELD}
        out.append((timer.due - T0, from_queue(body)))
    return out


def _on_scheduler() -> tuple[Any, Read]:
    from holdpoint.aws.timers import Timers

    return Timers(clock=lambda: T0), _schedules


@pytest.fixture(params=["memory", "scheduler"])
def timers(request: pytest.FixtureRequest) -> tuple[Any, Read]:
    """Timers of one kind, and the ones they hold."""
    return side(request, _in_memory, _on_scheduler)


def held(read: Read) -> list[Timer]:
    return sorted(read(), key=repr)


def test_timers_one_key_of_a_session_is_one_timer_however_often_asked(timers: tuple[Any, Read]) -> None:
    ask, read = timers
    ask.schedule(30, Kick("t1", "s1"), "kick:retry")
    ask.schedule(30, Kick("t1", "s1"), "kick:retry")
    ask.schedule(600, Wake("t1", "s1", "i1", "expired", 0), "kick:retry")  # the first ask stands
    assert read() == [(30.0, Kick("t1", "s1"))]


def test_timers_another_key_session_or_tenant_is_another_timer(timers: tuple[Any, Read]) -> None:
    ask, read = timers
    ask.schedule(30, Kick("t1", "s1"), "kick:retry")
    ask.schedule(45, Kick("t1", "s1"), "kick:later")
    ask.schedule(30, Kick("t1", "s2"), "kick:retry")
    ask.schedule(30, Kick("t2", "s1"), "kick:retry")
    assert held(read) == sorted([(30.0, Kick("t1", "s1")), (45.0, Kick("t1", "s1")), (30.0, Kick("t1", "s2")),
                                 (30.0, Kick("t2", "s1"))], key=repr)


def test_timers_a_timer_holds_its_message_as_the_engine_parses_it(timers: tuple[Any, Read]) -> None:
    ask, read = timers
    messages: list[WorkMessage] = [Deadline("t1", "s1", "call-1", 2), ParkRetry("t1", "s1", "i1", 3, 1),
                                   NotifyRetry("t1", "s1", "evt_1#0", 4), Wake("t1", "s1", "i1", "expired", 3)]
    for at, message in enumerate(messages, start=1):
        ask.schedule(60 * at, message, f"timer-{at}")
    assert held(read) == sorted([(60.0 * at, m) for at, m in enumerate(messages, start=1)], key=repr)
