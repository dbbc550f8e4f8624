"""Step Functions: a workflow's own `.waitForTaskToken` task waits for a person.

The workflow hands its task token to a bridge (an SQS queue it sends to with
`arn:aws:states:::sqs:sendMessage.waitForTaskToken`, or a Lambda function it invokes with
`lambda:invoke.waitForTaskToken`), whose message carries the token and the approvals to ask.
`ask_for_task` raises them in Holdpoint as a run whose target is one of the agent's
`{step_functions: true}` targets; Holdpoint completes the token when the people have answered:
`SendTaskSuccess` with the answers as the task's output when every answer approves, otherwise
`SendTaskFailure` with the error `Holdpoint.Denied` (or `Holdpoint.Cancelled`) and the answers as
the cause, so the workflow's `Catch` takes the refusal. Nothing runs while they decide.

`task_handler(client)` is that bridge as a Lambda handler: for the SQS queue's trigger, or invoked
directly by the task. The message (or event) is
`{"task_token", "run_id", "agent_id", "target", "interrupts": [...], "state"?}`, the interrupts as
`POST /v1/runs/{run_id}/interrupts` takes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from holdpoint.core.protocols.client import RunInterruptsBody
from holdpoint_sdk.client import Client


def ask_for_task(client: Client, task: Mapping[str, Any]) -> dict[str, Any]:
    """Raise a waiting task's approvals (a retried message raises nothing twice)."""
    body = RunInterruptsBody.model_validate({
        "agent_id": task.get("agent_id"), "target": task.get("target"), "state": task.get("state"),
        "callback": {"task_token": task.get("task_token")}, "interrupts": task.get("interrupts")})
    return client.raise_run(str(task.get("run_id")), body.model_dump(mode="json", exclude_none=True, by_alias=True))


def task_handler(client: Client) -> Callable[[Mapping[str, Any], Any], dict[str, Any]]:
    """The bridge as a Lambda handler: an SQS event's records (a record that fails is reported
    back for SQS to redeliver), or one task's event invoked directly."""

    def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if "Records" not in event:
            return ask_for_task(client, event)
        failures = []
        for record in event["Records"]:
            try:
                ask_for_task(client, json.loads(record["body"]))
            except Exception:  # noqa: BLE001 - SQS redelivers the record; its error is the handler's log
                failures.append({"itemIdentifier": record.get("messageId")})
        return {"batchItemFailures": failures}

    return handler
