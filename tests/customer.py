"""A customer's SQS-triggered Lambda beside the local stack: its handler (the SDK's) run by the
local stack's own SQS event source mapping (`SqsPoller`), in Lambda's event shape, as Holdpoint's
functions are handed their batches."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from holdpoint_local.emulators.pollers import SqsPoller
from holdpoint_local.provision import SqsMapping

Handler = Callable[[Any, Any], Any]


class CustomerFunction:
    """What the poller invokes (`emulators.runtime.Function`): the handler, counting its records."""

    def __init__(self, name: str, handler: Handler) -> None:
        self.name, self.handler = name, handler
        self.invocations = self.records = self.in_flight = 0

    def invoke(self, event: Any) -> Any:
        self.invocations += 1
        self.records += len(event["Records"])
        return self.handler(event, None)

    def acting(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


@contextlib.contextmanager
def triggered_by(stack: Any, queue_url: str, handler: Handler, name: str = "customer") -> Iterator[CustomerFunction]:
    """`handler` as the Lambda an SQS queue of the customer's triggers (batches of 10, reporting failures)."""
    arn = stack.client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"]
    function = CustomerFunction(name, handler)
    stop = threading.Event()
    poller = SqsPoller(SqsMapping(f"{name}-queue", queue_url, arn, name, 10, True), function,
                       endpoint_url=stack.moto_endpoint, stop_event=stop)
    poller.start()
    try:
        yield function
    finally:
        stop.set()
        poller.join(10)
