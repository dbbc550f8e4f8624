"""A customer's Lambda durable function beside the local stack, run by AWS's durable execution
emulator (`aws-durable-execution-sdk-python-testing`): its executor, which checkpoints, suspends
and replays the function as Lambda does, and its web server, which serves the durable API.
Holdpoint's notifier completes a callback through the local stack's Lambda endpoint (moto), which
hands it to that server (moto fix 29). The function's invocations run in this process (the
emulator's in-process invoker) rather than in a Lambda container."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python_testing import DurableFunctionTestRunner
from aws_durable_execution_sdk_python_testing.web.server import WebServer, WebServiceConfig

from holdpoint_local.moto.server import set_durable_endpoint
from holdpoint_sdk.client import Client
from holdpoint_sdk.integrations.durable_function import Refused, wait_for_approval
from holdpoint_sdk.runs import Ask


class DurableHost:
    """The emulator running one durable handler: start executions, read their histories."""

    def __init__(self, handler: Callable[..., Any]) -> None:
        self.runner = DurableFunctionTestRunner(handler, skip_time=False, execution_timeout=600)
        # The runner's own executor, served: the callbacks sent over HTTP reach its executions.
        self.server = WebServer(WebServiceConfig(host="127.0.0.1", port=0), self.runner._executor)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self, event: str, name: str) -> str:
        return self.runner.run_async(input=event, execution_name=name, function_name="send-email")

    def history(self, arn: str) -> list[str]:
        """The execution's event types, in order."""
        found = self.runner.get_execution_history(arn)
        return [str(e.event_type) for e in found.events]


@contextlib.contextmanager
def durable_function(stack: Any, handler: Callable[..., Any]) -> Iterator[DurableHost]:
    """`handler` (a `durable_execution` handler) as a durable function the local stack's Lambda
    endpoint completes the callbacks of, for as long as the block runs."""
    host = DurableHost(handler)
    thread = threading.Thread(target=host.server.serve_forever, daemon=True)
    thread.start()
    set_durable_endpoint(stack.moto_endpoint, host.url)
    try:
        yield host
    finally:
        set_durable_endpoint(stack.moto_endpoint, None)
        host.server.shutdown()
        host.runner.close()


class Mailer:
    """The customer's function: ask, then send (a checkpointed step) or tell why not."""

    def __init__(self, client: Client) -> None:
        self.client, self.sent, self.bodies = client, list[str](), 0
        self.handler = durable_execution(self.run)

    def run(self, event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
        self.bodies += 1  # the body runs again on each replay; only checkpointed steps do not
        ask = Ask("send", f"Send the email to {event['to']}?", tool="send_email", arguments={"to": event["to"]},
                  **event.get("ask", {}))
        try:
            delivered = wait_for_approval(context, self.client, event["run_id"], "mailer", "mailbox", [ask])
        except Refused as refused:
            return {"sent": False, "why": str(refused)}
        context.step(lambda _: self.sent.append(event["to"]) or "sent", name="send_email")
        return {"sent": True, "verdicts": [a.verdict for a in delivered.answers]}
