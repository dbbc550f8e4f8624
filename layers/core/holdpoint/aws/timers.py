"""Durable timers: EventBridge Scheduler one-time schedules that put one message on the FIFO work queue.

A timer is an `at()` schedule in the deployment's schedule group, targeting the work queue with the
session's message group; it deletes itself once it has sent (`ActionAfterCompletion: DELETE`). It is
named by a hash of the session and the timer's key, so scheduling it again answers ConflictException:
one timer. No timer is a Step Functions execution, so none counts against the account-region's open
executions, which are left to parked interrupts (docs/CAPACITY.md, "Timers"). SQS message delay is
not an option: the work queue is FIFO, and FIFO queues have no per-message delay.

The work queue has content-based deduplication (Scheduler sends no deduplication id), so each body
carries the timer's name: two timers with the same message are two messages, a timer sent twice
(Scheduler delivers at least once) is one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict

from holdpoint.aws import clients
from holdpoint.aws.errors import Refused
from holdpoint.aws.queue import group_id, to_queue
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.messages import WorkMessage

NAME_FIELD = "schedule"
"""The body field naming the timer (parsing ignores it; content-based deduplication does not)."""
MAX_EVENT_AGE = 86_400
"""How long Scheduler keeps retrying a send the queue refused (its longest), then gives up."""


def schedule_name(tenant: str, session_id: str, key: str) -> str:
    """64 hex characters: Scheduler's longest name, in its alphabet, and one per timer."""
    return hashlib.sha256(f"{tenant}/{session_id}/{key}".encode()).hexdigest()


def at_expression(when: float) -> str:
    """Scheduler's one-time expression for an epoch second, in UTC (the schedule's time zone)."""
    return "at(" + datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S") + ")"


class SqsParameters(TypedDict, total=False):
    MessageGroupId: str


class TargetRetry(TypedDict, total=False):
    MaximumEventAgeInSeconds: int
    MaximumRetryAttempts: int


class Target(TypedDict, total=False):
    """A schedule's target as `schedule` writes it: the work queue, and the message as `Input`."""

    Arn: str
    RoleArn: str
    Input: str
    SqsParameters: SqsParameters
    RetryPolicy: TargetRetry


class Schedule(TypedDict, total=False):
    """The part of a GetSchedule answer `scheduled` reads."""

    Name: str
    ScheduleExpression: str
    Description: str
    ActionAfterCompletion: str
    Target: Target


@dataclass(frozen=True)
class Scheduled:
    """A timer as Scheduler holds it (for the local firer and for tests)."""

    name: str
    due: float
    seconds: int
    target: Target
    after_completion: str = "NONE"

    @property
    def message(self) -> JsonObject:
        out: JsonObject = json.loads(self.target["Input"])
        return out


class Timers:
    def __init__(self, group: str | None = None, queue_arn: str | None = None, role_arn: str | None = None,
                 client: Any = None, clock: Callable[[], float] = time.time) -> None:
        self.group = group or os.environ.get("TIMER_SCHEDULE_GROUP", "default")
        self.queue_arn = queue_arn or os.environ.get("TIMER_TARGET_ARN", "")
        self.role_arn = role_arn or os.environ.get("TIMER_ROLE_ARN", "")
        self.client = clients.refusing(client) if client is not None else clients.client("scheduler")
        self.clock = clock

    def schedule(self, seconds: float, message: WorkMessage, key: str) -> None:
        tenant, session_id = message.tenant, message.session_id
        name = schedule_name(tenant, session_id, key)
        wait = max(1, math.ceil(seconds))  # never early: a kick before not_before finds nothing due
        try:
            self.client.create_schedule(
                Name=name, GroupName=self.group,
                ScheduleExpression=at_expression(math.ceil(self.clock()) + wait), ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"}, ActionAfterCompletion="DELETE",
                Description=f"after {wait}s: {key}"[:512],
                Target={
                    "Arn": self.queue_arn, "RoleArn": self.role_arn,
                    "Input": json.dumps({**to_queue(message), NAME_FIELD: name}),
                    "SqsParameters": {"MessageGroupId": group_id(tenant, session_id)},
                    "RetryPolicy": {"MaximumEventAgeInSeconds": MAX_EVENT_AGE, "MaximumRetryAttempts": 185},
                },
            )  # fmt: skip
        except Refused as exc:
            if exc.code != "ConflictException":  # scheduled already: one timer
                raise

    def pending(self) -> list[Scheduled]:
        """The group's timers that have not fired yet, soonest first."""
        out: list[Scheduled] = []
        pages = self.client.get_paginator("list_schedules").paginate(GroupName=self.group)
        for page in pages:
            for item in page.get("Schedules", []):
                try:
                    got = self.client.get_schedule(Name=item["Name"], GroupName=self.group)
                except Refused as exc:
                    if exc.code == "ResourceNotFoundException":  # fired meanwhile
                        continue
                    raise
                out.append(scheduled(got))
        return sorted(out, key=lambda s: (s.due, s.name))


def scheduled(schedule: Schedule) -> Scheduled:
    """A GetSchedule answer as a `Scheduled`."""
    text = str(schedule["ScheduleExpression"])[len("at("):-1]
    due = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    description = str(schedule.get("Description") or "")
    seconds = int(description[len("after "):].split("s:", 1)[0]) if description.startswith("after ") else 0
    return Scheduled(str(schedule["Name"]), due, seconds, schedule["Target"].copy(),
                     str(schedule.get("ActionAfterCompletion") or "NONE"))
