"""The seed's `decide` as an HTTPS-style worker, on the SDK (`pip install ./sdk`).

Run it with `python examples/seed_worker.py --port 9001` and point an agent's `worker.url` at it;
set `HOLDPOINT_WORKER_SECRET` on both sides to sign and verify. The SDK's `Worker` checks the
signature and the request, checks the answer before it leaves, answers a decision it answered
before with the same answer, and runs the same `decide` as a Lambda or an SQS consumer.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Mapping
from http.server import ThreadingHTTPServer
from typing import Any

from holdpoint_sdk.worker import LATER, DecisionRequest, Worker

__all__ = ["LATER", "decide", "serve", "worker"]
Answer = Callable[[dict[str, Any]], Any]
"""A worker's answer to a request as it was sent (a dict): the seed's, or a test's own."""


def decide(trigger: dict[str, Any], proposed: dict[str, Any] | None,
           calls: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """Pause before a sensitive action, then act on the answer (the seed, line for line). An
    interrupt someone raised through the API (no `send_email` call of ours waits on it, as the
    request's open `calls` show) has nothing to send or decline: its answer goes on as proposed."""
    if trigger["type"] == "tool.execute" and trigger["name"] == "send_email":
        return {"actions": [{"type": "interrupt", "reason": "confirm", "payload": {"message": "Send the email?"}}]}
    if trigger["type"] == "interrupt.resumed" and calls is not None and not any(
            c.get("kind") == "tool_call" and c.get("name") == "send_email" for c in calls):
        return proposed or {"actions": []}
    if trigger["type"] == "interrupt.resumed":
        answer = trigger.get("payload")
        if isinstance(answer, dict) and answer.get("approved") is True:
            return {"actions": [{"type": "tool.result", "result": "sent"}]}
        return {"actions": [{"type": "tool.error", "error": "declined"}]}
    return proposed


def seed(sent: dict[str, Any]) -> Any:
    return decide(sent["trigger"], sent.get("proposed"), sent.get("calls"))


class Recording(Worker):
    """A worker that keeps every request it was sent (`seen`), repeats included."""

    def __init__(self, answer: Answer, secret: str | None, remember: int = 1024) -> None:
        super().__init__(lambda request: answer(request.wire()), secret, remember=remember)
        self.seen: list[dict[str, Any]] = []

    def request(self, body: bytes, headers: Mapping[str, str], max_skew: float | None = None) -> DecisionRequest:
        got = super().request(body, headers, max_skew)
        self.seen.append(got.wire())
        return got


def worker(secret: str | None = None, answer: Answer = seed, remember: int = 1024) -> Recording:
    """`remember=0`: every delivery reaches `answer`, a redelivered decision too (the soak counts them)."""
    return Recording(answer, secret, remember)


def serve(port: int = 0, secret: str | None = None, host: str = "127.0.0.1", answer: Answer = seed,
          remember: int = 1024) -> tuple[ThreadingHTTPServer, list[dict[str, Any]]]:
    """The worker on a thread, on `host` (where the engine reaches it: loopback in process, Docker's
    bridge address for functions in containers): the server (for its port) and the requests it saw."""
    running = worker(secret, answer, remember)
    return running.serve(port, host), running.seen


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9001)
    args = parser.parse_args()
    server, _ = serve(args.port, os.environ.get("HOLDPOINT_WORKER_SECRET"))
    print(f"seed worker on http://127.0.0.1:{server.server_address[1]}/")
    threading.Event().wait()
