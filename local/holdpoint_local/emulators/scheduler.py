"""EventBridge Scheduler's firing, for the local stack: moto stores schedules (CreateSchedule,
GetSchedule, ListSchedules, DeleteSchedule) but never invokes their targets. One thread looks at the
stack's schedule group, and each one-time schedule that is due is sent as Scheduler sends it to an
SQS target (the schedule's `Input` as the body, its `SqsParameters.MessageGroupId`, no deduplication
id: the FIFO queue deduplicates on content), then deleted when its `ActionAfterCompletion` is DELETE.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from holdpoint.aws.timers import Scheduled, Timers

from .. import REGION
from .runtime import run_until_stopped

log = logging.getLogger("holdpoint_local.emulators.scheduler")

TICK_SECONDS = 0.25
"""How often the group is looked at: a timer fires at or after its time, at most this much later
(Scheduler's `at()` has one-second resolution)."""


class SchedulerFirer:
    """The schedules of one group, fired when due. `fired` keeps each one sent, in order (tests read it)."""

    def __init__(self, endpoint_url: str, group: str, *, clock: Callable[[], float] = time.time) -> None:
        def client(service: str) -> Any:
            return boto3.client(service, endpoint_url=endpoint_url, region_name=REGION, aws_access_key_id="testing",
                                aws_secret_access_key="testing", config=Config(retries={"max_attempts": 2}))

        self.scheduler, self.sqs = client("scheduler"), client("sqs")
        self.timers = Timers(group=group, client=self.scheduler, clock=clock)
        self.clock = clock
        self.fired: list[Scheduled] = []
        self.fired_at: dict[str, float] = {}  # schedule name -> when it was sent (the firer's clock)
        self.stop_event = threading.Event()
        self._urls: dict[str, str] = {}
        self._thread = threading.Thread(target=self._run, name=f"scheduler-{group}", daemon=True)

    def start(self) -> SchedulerFirer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        def tick() -> None:
            self.fire_due()
            self.stop_event.wait(TICK_SECONDS)

        run_until_stopped(self.stop_event, tick, "scheduler tick")

    def fire_due(self) -> int:
        """Send every schedule whose time has come; returns how many were sent."""
        now, sent = self.clock(), 0
        for timer in self.timers.pending():
            if timer.due > now:
                break
            self.fire(timer)
            sent += 1
        return sent

    def fire(self, timer: Scheduled) -> None:
        target = timer.target
        arn = str(target["Arn"])
        if ":sqs:" not in arn:
            raise ValueError(f"schedule {timer.name}: the local scheduler sends to SQS targets only, not {arn}")
        kwargs: dict[str, Any] = {"QueueUrl": self._url(arn), "MessageBody": target.get("Input", "{}")}
        group = (target.get("SqsParameters") or {}).get("MessageGroupId")
        if group:
            kwargs["MessageGroupId"] = group
        self.sqs.send_message(**kwargs)
        self.fired.append(timer)
        self.fired_at[timer.name] = self.clock()
        log.info("fired schedule %s", timer.name)
        if timer.after_completion == "DELETE":
            try:
                self.scheduler.delete_schedule(Name=timer.name, GroupName=self.timers.group)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                    raise

    def _url(self, arn: str) -> str:
        if arn not in self._urls:
            _, _, _, _, account, name = arn.split(":", 5)
            self._urls[arn] = self.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        return self._urls[arn]
