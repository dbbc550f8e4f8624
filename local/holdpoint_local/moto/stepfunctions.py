"""Fixes 27-28 to moto 5.2.5's Step Functions (a task token answered once; a failure keeps its
cause), and a local-only control that is not a fix: a cap on open executions (`CAP_KEY`, off
unless set), standing in for the account-region's ceiling so tests can reach it."""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any

CAP_KEY = "open_executions_cap"
"""`POST /moto-api/config {"stepfunctions": {..., "open_executions_cap": N}}` (server.set_execution_cap):
past N running executions in the account-region, StartExecution answers ExecutionLimitExceeded."""


def _cap_open_executions() -> None:
    """Not a fix: a control the local stack's tests use to stand in for Step Functions' ceiling of
    open Standard executions (1,000,000 per account-region), which moto does not have. Off unless
    a cap is set; a start of an execution that exists already (an idempotent retry) is not refused."""
    from moto.core.config import default_user_config
    from moto.core.exceptions import AWSError
    from moto.stepfunctions.responses import StepFunctionResponse, get_backend

    class ExecutionLimitExceeded(AWSError):
        TYPE = "ExecutionLimitExceeded"
        STATUS = 400

    original = StepFunctionResponse.start_execution

    @functools.wraps(original)
    def start(self: StepFunctionResponse) -> Any:
        cap: Any = (default_user_config.get("stepfunctions") or {}).get(CAP_KEY)
        if cap is not None:
            backend = get_backend(self.current_account, self.region)
            name = self._get_param("name")
            machines = backend.state_machines
            arn = self._get_param("stateMachineArn")
            exists = any(e.name == name for m in machines if m.arn == arn for e in m.executions)
            running = sum(1 for m in machines for e in m.executions if _running(e))
            if not exists and running >= int(cap):
                raise ExecutionLimitExceeded(f"Maximum open executions ({cap}) reached")
        return original(self)

    StepFunctionResponse.start_execution = start  # type: ignore[method-assign]


def _running(execution: Any) -> bool:
    """The executing backend's executions keep their status in `exec_status` (None before they start)."""
    status = execution.exec_status if hasattr(execution, "exec_status") else execution.status
    return str(getattr(status, "value", status)) == "RUNNING"


def _answer_a_token_once() -> None:
    """Fix 27: a task token takes one answer. moto kept a callback open until the execution's own
    thread had read its outcome, so a second SendTaskSuccess (or SendTaskFailure) that came in
    before then was answered 200 too, where Step Functions refuses a token whose task has its answer.
    The second is now refused TaskTimedOut, the answer moto gives a token whose wait has ended;
    the check and the answer are one step, so two answers at once cannot both be taken."""
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackConsumerTimeout,
        CallbackNotifyConsumerError,
        CallbackOutcome,
        CallbackPoolManager,
    )

    original = CallbackPoolManager.notify
    lock = threading.Lock()

    @functools.wraps(original)
    def notify(self: CallbackPoolManager, callback_id: str, outcome: CallbackOutcome) -> bool:
        with lock:
            endpoint = self.get(callback_id)
            if endpoint is not None and endpoint.consumer_error is None and endpoint.get_outcome() is not None:
                raise CallbackNotifyConsumerError(callback_consumer_error=CallbackConsumerTimeout())
            return bool(original(self, callback_id, outcome))

    CallbackPoolManager.notify = notify  # type: ignore[method-assign]


def _failure_keeps_its_cause() -> None:
    """Fix 28: SendTaskFailure's `cause` reaches the execution. moto's handler passed only the
    error on, so the TaskFailed and ExecutionFailed events (and a Catch's `$.Cause`) had none, where
    Step Functions records both. (The backend that only records executions takes no cause.)"""
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: StepFunctionResponse) -> Any:
        from moto.core.responses import ActionResult, EmptyResult

        backend = self.stepfunction_backend
        failed: dict[str, Any] = {"error": self._get_param("error")}
        if "cause" in inspect.signature(backend.send_task_failure).parameters:  # the executing backend's
            failed["cause"] = self._get_param("cause")
        backend.send_task_failure(self._get_param("taskToken"), **failed)
        result: ActionResult = EmptyResult()
        return result

    StepFunctionResponse.send_task_failure = send_task_failure  # type: ignore[method-assign]


def apply() -> None:
    """Install fixes 27-28 and the cap (`holdpoint_local.moto.apply` calls this once)."""
    _answer_a_token_once()
    _failure_keeps_its_cause()
    _cap_open_executions()
