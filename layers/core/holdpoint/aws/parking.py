"""Holding and releasing a parked branch: one ParkBranch execution per interrupt holds its task
token until the interrupt is resolved (then released) or expires (its timeout). Past the
account-region's open-execution ceiling the start is refused (`ParkRefused`); the interrupt stays
open in the table and the runner retries the park on a timer (docs/ARCHITECTURE.md, "Parking")."""

from __future__ import annotations

import json
import os
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.queue import WorkQueue, group_id
from holdpoint.core.interrupts import park_seconds
from holdpoint.core.state import Interrupt
from holdpoint.ports import ParkRefused

NO_CAPACITY = ("ExecutionLimitExceeded", "ThrottlingException")
"""StartExecution's answers that mean "not now": the open-execution ceiling, a throttle."""


class Parking:
    def __init__(self, state_machine_arn: str | None = None, client: Any = None,
                 queue: WorkQueue | None = None) -> None:
        self.arn = state_machine_arn or os.environ["PARK_STATE_MACHINE_ARN"]
        self.client = clients.refusing(client) if client is not None else clients.client("stepfunctions")
        self._queue = queue

    @property
    def queue(self) -> WorkQueue:
        if self._queue is None:
            self._queue = WorkQueue()
        return self._queue

    def start(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> str:
        """Start (or find) the execution; named by the interrupt so a retried start is idempotent.
        `timeout_seconds` is what is left of the expiry when the park starts late."""
        timeout = timeout_seconds or park_seconds(interrupt.expires_in)
        payload = {
            "tenant": tenant,
            "session_id": session_id,
            "interrupt_id": interrupt.interrupt_id,
            "group_id": group_id(tenant, session_id),
            "dedup_key": interrupt.dedup_key,
            "generation": interrupt.generation,
            "timeout_seconds": timeout,
        }
        try:
            out = self.client.start_execution(stateMachineArn=self.arn, name=interrupt.dedup_key,
                                              input=json.dumps(payload))
            return str(out["executionArn"])
        except clients.Refused as exc:
            if exc.code in NO_CAPACITY:
                raise ParkRefused(exc.code) from exc
            if exc.code != "ExecutionAlreadyExists":
                raise
            return self.arn.replace(":stateMachine:", ":execution:") + f":{interrupt.dedup_key}"

    def release(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """Wake a resolved interrupt's branch, then end its execution. The wake goes first, straight
        onto the work queue: ParkBranch's success path is its one Park state (one billed transition),
        and the engine starts while `SendTaskSuccess` is in flight. A crash between the two leaves
        the execution waiting; its timeout then sends a wake the engine finds already applied, and
        a retried resume ends it sooner (docs/ARCHITECTURE.md, "Parking")."""
        self.queue.wake(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
        if interrupt.parking_key:
            self.complete(interrupt.parking_key, {"interrupt_id": interrupt.interrupt_id})

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """The expiry ParkBranch's timeout would send, for a raise whose execution never started."""
        self.queue.expire(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)

    def complete(self, token: str, output: dict[str, Any]) -> bool:
        """SendTaskSuccess, which ends the execution; False when the token is already spent or
        timed out (a no-op)."""
        try:
            self.client.send_task_success(taskToken=token, output=json.dumps(output))
            return True
        except clients.Refused as exc:
            if exc.code in ("InvalidToken", "TaskTimedOut", "TaskDoesNotExist"):
                return False
            raise
