"""Lambda durable functions: a `wait_for_callback` waits for a person.

`wait_for_approval(context, client, run_id, agent_id, target, asks)` raises the asks in Holdpoint
from the callback's submitter (a checkpointed step: it runs once; a retry raises nothing twice) and
suspends the function: its invocation ends, and nothing runs while people decide. Holdpoint
completes the callback when every ask has its answer (`target` is one of the agent's
`{durable_function: true}` targets, which take them all together):
`SendDurableExecutionCallbackSuccess` with the delivery as the result when every answer approves,
otherwise `...Failure` with the refusal as the message and the delivery as the error's data. The
function replays to the wait and gets the delivery back, or `Refused` with it.

A wait's `timeout` is the durable function's own limit; an ask's `expires_in` and `on_expiry` are
Holdpoint's, and an expiry under `deny` completes the callback as a refusal before the timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_durable_execution_sdk_python import CallbackExternalError, DurableContext
from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig
from aws_durable_execution_sdk_python.types import WaitForCallbackContext

from holdpoint.core.protocols.runs import RunDelivery
from holdpoint_sdk.client import Client
from holdpoint_sdk.runs import Ask, DeliveryRefused, ask, delivery, refusal

__all__ = ["Refused", "wait_for_approval"]
DEFAULT_TIMEOUT = Duration.from_days(7)


class Refused(Exception):  # noqa: N818 - what the function catches: the approval was refused
    """The people refused (or the ask expired under `deny`): the delivery says who and how."""

    def __init__(self, delivered: RunDelivery | None, message: str) -> None:
        super().__init__(message)
        self.delivery = delivered


def wait_for_approval(context: DurableContext, client: Client, run_id: str, agent_id: str, target: str,
                      asks: Sequence[Ask], *, state: Any = None, name: str = "holdpoint-approval",
                      timeout: Duration = DEFAULT_TIMEOUT) -> RunDelivery:
    """Ask and wait (suspended) for every answer: the delivery when none refuses, else `Refused`."""

    def submit(callback_id: str, _: WaitForCallbackContext) -> None:
        ask(client, run_id, agent_id, asks, target=target, deliver="all", state=state,
            callback={"callback_id": callback_id})

    try:
        result = context.wait_for_callback(submit, name=name, config=WaitForCallbackConfig(timeout=timeout))
    except CallbackExternalError as exc:
        try:
            delivered: RunDelivery | None = delivery(exc.data) if exc.data else None
        except DeliveryRefused:  # a failure of another sender's: refused all the same
            delivered = None
        answers = delivered.answers if delivered is not None else []
        refused = next((a for a in answers if a.verdict in ("denied", "cancelled")), None)
        raise Refused(delivered, refusal(refused)) from exc
    return delivery(result)
