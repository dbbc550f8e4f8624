"""The channels that deliver an external run's answers (PROTOCOL.md §10) to the target the agent
declares: each a `NotifyChannel`, so a delivery is claimed once, retried on a durable timer and
dead-lettered in the end like a notification (holdpoint/notify/service.py). The target is checked again at
every attempt (a worker may have replaced the config in force), and every delivery carries its
stable `delivery_id` for the receiver to dedupe on.

- `run.lambda`: asynchronous Invoke (`InvocationType: Event`), the body as the event;
- `run.queue`: SQS `SendMessage` (a FIFO queue: the run's id as its group, the delivery id as its
  deduplication id);
- `run.url`: a signed POST, as a worker request is signed (§2.7);
- `run.step_functions`: the caller's task token, completed with `SendTaskSuccess` (every answer
  approves, or answers with no verdict) or `SendTaskFailure` (`Holdpoint.Denied`, `Holdpoint.Cancelled`);
- `run.durable_function`: a Lambda durable function's callback, completed the same way with
  `SendDurableExecutionCallbackSuccess` or `...Failure`.
"""

from __future__ import annotations

import json
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.errors import SdkFailure
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.state import Interrupt
from holdpoint.notify.channels import DELIVERY_HEADER, TIMEOUT_SECS
from holdpoint.outbound import queues
from holdpoint.outbound.errors import QueueRefused
from holdpoint.outbound.workers import check_lambda_arn, post_signed
from holdpoint.ports import DeliveryFailed, WorkerUnavailable

SPENT = ("TaskDoesNotExist", "TaskTimedOut", "InvalidToken", "ResourceNotFoundException",
         "CallbackTimeoutException", "InvalidParameterValueException")
"""What AWS answers for a wait already completed, timed out or gone: nothing left to deliver to."""
MAX_CAUSE = 32_768
MAX_RESULT = 262_144
"""A durable callback's result (and its error's data) is at most 256 KiB."""


def _refused(why: str | None) -> None:
    if why is not None:
        raise DeliveryFailed(why)


def _answers(event: JsonObject) -> list[JsonObject]:
    found = event.get("answers")
    return [a for a in found if isinstance(a, dict)] if isinstance(found, list) else []


def outcome(event: JsonObject) -> str | None:
    """None when a wait completes with success (every answer approves, or says neither), else the
    error it fails with: the first answer that denies (`Holdpoint.Denied`) or dismisses."""
    for answer in _answers(event):
        if answer.get("verdict") in ("denied", "cancelled"):
            return f"Holdpoint.{str(answer['verdict']).capitalize()}"
    return None


class _Channel:
    """Nothing to prepare: a run's delivery is made of what the event already holds."""

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject:
        return {}


class RunUrlChannel(_Channel):
    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        url, secret = entry.get("url"), entry.get("secret") or None
        if not isinstance(url, str) or not (secret is None or isinstance(secret, str)):
            raise DeliveryFailed("a run's url target needs a url string and, optionally, a secret reference")
        tenant = event.get("tenant")
        try:
            post_signed(url, event, secret, tenant if isinstance(tenant, str) else None, "run", TIMEOUT_SECS,
                        {DELIVERY_HEADER: str(event.get("delivery_id"))})
        except WorkerUnavailable as exc:
            raise DeliveryFailed(str(exc)) from exc


def _call(service: str, method: str, spent_ok: bool = False, **params: Any) -> None:
    """One call to the customer's AWS resource; its failures are the delivery's to retry, except
    a wait already completed or gone (`spent_ok`), which is done."""
    try:
        with clients.sdk_failures():
            getattr(clients.sdk(service), method)(**params)
    except SdkFailure as exc:
        if spent_ok and exc.code in SPENT:
            return
        raise DeliveryFailed(f"{service} {method}: {exc.code or exc.kind}: {exc.message}"[:512]) from exc


class RunLambdaChannel(_Channel):
    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        arn = entry.get("lambda")
        _refused(check_lambda_arn(arn, "run target lambda"))
        _call("lambda", "invoke", FunctionName=arn, InvocationType="Event", Payload=json.dumps(event).encode())


class RunQueueChannel(_Channel):
    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        try:
            queues.send(str(entry.get("queue")), "run target queue", event, group=str(event.get("run_id")),
                        dedup=str(event.get("delivery_id")))
        except QueueRefused as exc:
            raise DeliveryFailed(str(exc)) from exc


def _callback(entry: JsonObject, field: str) -> str:
    given = entry.get("callback")
    value = given.get(field) if isinstance(given, dict) else None
    if not isinstance(value, str) or not value:
        raise DeliveryFailed(f"the run gave no callback.{field} to complete")
    return value


def _cause(event: JsonObject) -> str:
    return json.dumps(event)[:MAX_CAUSE]


class RunTaskChannel(_Channel):
    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        token = _callback(entry, "task_token")
        error = outcome(event)
        if error is None:
            _call("stepfunctions", "send_task_success", spent_ok=True, taskToken=token, output=json.dumps(event))
        else:
            _call("stepfunctions", "send_task_failure", spent_ok=True, taskToken=token, error=error,
                  cause=_cause(event))


class RunDurableChannel(_Channel):
    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        callback = _callback(entry, "callback_id")
        error = outcome(event)
        if error is None:
            _call("lambda", "send_durable_execution_callback_success", spent_ok=True, CallbackId=callback,
                  Result=json.dumps(event).encode())
        else:
            failure: JsonValue = {"ErrorType": error, "ErrorMessage": f"{error}: a person refused the approval",
                                  "ErrorData": json.dumps(event)[:MAX_RESULT]}
            _call("lambda", "send_durable_execution_callback_failure", spent_ok=True, CallbackId=callback,
                  Error=failure)


def channels() -> dict[str, Any]:
    """Every run channel, by its name, for the notifier's assembly."""
    return {"run.lambda": RunLambdaChannel(), "run.queue": RunQueueChannel(), "run.url": RunUrlChannel(),
            "run.step_functions": RunTaskChannel(), "run.durable_function": RunDurableChannel()}
