"""Holding and releasing a parked branch: one ParkBranch execution per raise of an interrupt holds
its task token until the interrupt is resolved (then released) or expires (its timeout). The
execution's ARN, the refusals to start it and its task token are the parking's own record, one
item per raise (aws/ddb/parking.py); the session's state never holds them. Past the
account-region's open-execution ceiling the start is refused (`ParkRefused`); the interrupt stays
open in the table and services/park.py retries the park on a timer (docs/ARCHITECTURE.md, "Parking")."""

from __future__ import annotations

import json
import os
from typing import Any

from holdpoint import tracing
from holdpoint.aws import clients
from holdpoint.aws.ddb.parking import ParkRecords
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import Refused
from holdpoint.aws.queue import WorkQueue, group_id
from holdpoint.aws.recorded_parking import RecordedParking
from holdpoint.core.interrupts import park_seconds
from holdpoint.core.state import Interrupt
from holdpoint.ports import ParkRecord, ParkRefused
from holdpoint.ports import ParkRecords as Records

NO_CAPACITY = ("ExecutionLimitExceeded", "ThrottlingException")
"""StartExecution's answers that mean "not now": the open-execution ceiling, a throttle."""


def traced_start() -> dict[str, str]:
    """StartExecution's `traceHeader`: the execution (with the state machine's tracing on) is part
    of the hop's trace."""
    header = tracing.outgoing()
    return {"traceHeader": header} if header else {}


class Parking(RecordedParking):
    def __init__(self, state_machine_arn: str | None = None, client: Any = None,
                 queue: WorkQueue | None = None, records: Records | None = None) -> None:
        self.arn = state_machine_arn or os.environ["PARK_STATE_MACHINE_ARN"]
        self.client = clients.refusing(client) if client is not None else clients.client("stepfunctions")
        self._queue = queue
        self._records = records

    @property
    def queue(self) -> WorkQueue:
        if self._queue is None:
            self._queue = WorkQueue()
        return self._queue

    @property
    def records(self) -> Records:
        if self._records is None:
            self._records = ParkRecords(Table(os.environ["TABLE_NAME"]))
        return self._records

    def park_records(self) -> Records:
        return self.records

    def wakes(self) -> WorkQueue:
        return self.queue

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
            "trace": tracing.outgoing() or "",  # ParkBranch's park and expiry messages carry it on
        }
        try:
            out = self.client.start_execution(stateMachineArn=self.arn, name=interrupt.dedup_key,
                                              input=json.dumps(payload), **traced_start())
            return str(out["executionArn"])
        except Refused as exc:
            if exc.code in NO_CAPACITY:
                raise ParkRefused(exc.code) from exc
            if exc.code != "ExecutionAlreadyExists":
                raise
            return self.arn.replace(":stateMachine:", ":execution:") + f":{interrupt.dedup_key}"

    def joined(self, record: ParkRecord | None) -> None:
        """The resume's hop joins the trace of the turn that parked (the record's `trace`)."""
        tracing.adopt(record.trace if record is not None else None)

    def complete(self, token: str, output: dict[str, Any]) -> bool:
        """SendTaskSuccess, which ends the execution; False when the token is already spent or
        timed out (a no-op)."""
        try:
            self.client.send_task_success(taskToken=token, output=json.dumps(output))
            return True
        except Refused as exc:
            if exc.code in ("InvalidToken", "TaskTimedOut", "TaskDoesNotExist"):
                return False
            raise
