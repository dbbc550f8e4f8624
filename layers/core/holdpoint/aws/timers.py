"""Durable timers: a Step Functions Wait, then a message on the FIFO work queue.

SQS FIFO queues have no per-message delay, and a sleeping Lambda is compute we do not want,
so a backoff or a deadline is a Standard execution of the Timer state machine (named by the
timer's key, so scheduling it twice is one timer).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

from botocore.exceptions import ClientError

from holdpoint.aws import clients
from holdpoint.aws.queue import group_id
from holdpoint.core.messages import WorkMessage, body


class Timers:
    def __init__(self, state_machine_arn: str | None = None, client: Any = None) -> None:
        self.arn = state_machine_arn or os.environ.get("TIMER_STATE_MACHINE_ARN", "")
        self.client = client or clients.client("stepfunctions")

    def schedule(self, seconds: float, message: WorkMessage, key: str) -> None:
        tenant, session_id = message.tenant, message.session_id
        name = hashlib.sha256(f"{tenant}/{session_id}/{key}".encode()).hexdigest()[:64]
        payload = {
            "seconds": max(0, math.ceil(seconds)),  # never early: a kick before not_before finds nothing due
            "message": body(message),  # the Timer state machine's Fire state sends it as it is
            "group_id": group_id(tenant, session_id),
            "dedup": name,
        }
        try:
            self.client.start_execution(stateMachineArn=self.arn, name=name, input=json.dumps(payload))
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ExecutionAlreadyExists":
                raise
