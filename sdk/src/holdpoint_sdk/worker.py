"""A worker's side of the decision protocol (PROTOCOL.md §2), on the server's own wire models.

`decide(request)` is handed a `DecisionRequest` (its trigger typed: a `ToolExecute`, an
`InterruptResumed`, ...) and returns the decision's answer (a dict or a `DecisionResponse`), None
to take the engine's proposal, or `LATER` to answer later through `POST /v1/workers/submit`.
A `Worker` serves it:

- over HTTPS: `serve(port)`, `handle(body, headers)` in any web framework, or `asgi` for an ASGI server;
- as a Lambda worker (`worker.lambda_arn`): `lambda_handler`;
- as an SQS consumer (`worker.queue`): `sqs_handler(client)`, which submits each answer.

Each checks what it is sent (the signature when a secret is set, then the request's shape) and
what it answers (a response the server would refuse is the worker's error, raised before it
leaves), and answers a decision it answered before with the same answer: a decision redelivered
after a lost reply repeats nothing.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from holdpoint.core import signatures
from holdpoint.core.protocols.worker import DecisionRequest
from holdpoint.core.protocols.worker_actions import DecisionResponse
from holdpoint_sdk.client import Client

__all__ = ["LATER", "DecisionRequest", "DecisionResponse", "Worker", "WorkerRefused"]
LATER: Any = object()
"""What `decide` returns to take a decision and answer it later (HTTP 202; nothing is submitted now)."""
MAX_REQUEST_BYTES = 16 * 1_048_576
QUEUE_MAX_SKEW_SECS = 3_600.0
"""A queued request may wait in its queue longer than an HTTP one is in flight."""

Decide = Callable[[DecisionRequest], Any]


class WorkerRefused(ValueError):
    """A request that is not Holdpoint's (unsigned, stale, or not a decision request): refused."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Worker:
    """`decide`, checked on the way in and out, each decision id answered once."""

    def __init__(self, decide: Decide, secret: str | None = None, *, max_skew: float = signatures.MAX_SKEW_SECS,
                 remember: int = 1024, clock: Callable[[], float] = time.time) -> None:
        self.decide, self.secret, self.max_skew, self.clock = decide, secret, max_skew, clock
        self.remember = remember
        self._answered: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        self._lock = threading.Lock()

    def request(self, body: bytes, headers: Mapping[str, str], max_skew: float | None = None) -> DecisionRequest:
        """The request `body` carries, once its signature (when a secret is set) verifies."""
        if self.secret:
            lower = {k.lower(): v for k, v in headers.items()}
            if not signatures.verify(self.secret, lower.get(signatures.TIMESTAMP_HEADER.lower(), ""), body,
                                     lower.get(signatures.SIGNATURE_HEADER.lower(), ""), self.clock(),
                                     self.max_skew if max_skew is None else max_skew):
                raise WorkerRefused(401, "the request's signature does not verify (is the secret the same on both "
                                    "sides, and this machine's clock right?)")
        try:
            return DecisionRequest.model_validate(json.loads(body))
        except (ValueError, ValidationError) as exc:
            raise WorkerRefused(400, f"not a decision request: {str(exc)[:300]}") from None

    def answer(self, request: DecisionRequest) -> Any:
        """`decide`'s answer, checked as the server checks it; the same one for a decision id
        answered before; `LATER` as it is."""
        with self._lock:
            if request.decision_id in self._answered:
                return self._answered[request.decision_id]
        decided = self.decide(request)
        if decided is LATER:
            return LATER
        out = _checked(decided)
        with self._lock:
            self._answered[request.decision_id] = out
            while len(self._answered) > self.remember:
                self._answered.popitem(last=False)
        return out

    # -- transports ---------------------------------------------------------------------------
    def handle(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """An HTTP exchange: (status, body): 200 with the answer, 202 for `LATER`, 401 or 400 refused."""
        try:
            decided = self.answer(self.request(body, headers))
        except WorkerRefused as exc:
            return exc.status, json.dumps({"error": str(exc)}).encode()
        if decided is LATER:
            return 202, b""
        return 200, json.dumps(decided).encode()

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
        """An HTTP worker on a thread (`worker.url` points at it)."""
        server = ThreadingHTTPServer((host, port), http_handler(self))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    async def asgi(self, scope: Mapping[str, Any], receive: Callable[[], Awaitable[Mapping[str, Any]]],
                   send: Callable[[Mapping[str, Any]], Awaitable[None]]) -> None:
        """An ASGI app (uvicorn, hypercorn, ...): POST the request to any path."""
        if scope.get("type") != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        status, out = self.handle(body, headers)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})

    def lambda_handler(self, event: Mapping[str, Any], context: Any) -> dict[str, Any] | None:
        """A Lambda worker: the event is the request (IAM, not a signature, says who invoked it)."""
        decided = self.answer(DecisionRequest.model_validate(dict(event)))
        if decided is LATER:
            raise WorkerRefused(400, "a Lambda worker answers in its return value: it cannot answer later")
        return dict(decided) if decided is not None else None

    def sqs_handler(self, client: Client) -> Callable[[Mapping[str, Any], Any], dict[str, Any]]:
        """An SQS-triggered Lambda for `worker.queue`: each message's request answered and the
        answer submitted (`POST /v1/workers/submit`, a machine key); a record that fails is
        reported back (`ReportBatchItemFailures`) for SQS to redeliver."""

        def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
            failures = []
            for record in event.get("Records", []):
                try:
                    self._submit(client, record)
                except Exception:  # noqa: BLE001 - SQS redelivers the record; the error is in the log
                    failures.append({"itemIdentifier": record.get("messageId")})
            return {"batchItemFailures": failures}

        return handler

    def _submit(self, client: Client, record: Mapping[str, Any]) -> None:
        attributes = {k: v.get("stringValue", "") for k, v in (record.get("messageAttributes") or {}).items()}
        request = self.request(str(record["body"]).encode(), attributes, QUEUE_MAX_SKEW_SECS)
        decided = self.answer(request)
        if decided is LATER:
            return
        if decided is None:  # the engine's proposal, echoed (a null one leaves everything as it is)
            decided = request.proposed.wire() if request.proposed is not None else {}
        client.submit(request.session_id, request.decision_id, decided)


def _checked(decided: Any) -> dict[str, Any] | None:
    """The answer as the server will read it; one it would refuse is raised here, naming why."""
    if decided is None:
        return None
    raw = decided.model_dump(mode="json", exclude_none=True) if isinstance(decided, DecisionResponse) else decided
    DecisionResponse.model_validate(raw)
    return dict(raw)


def http_handler(worker: Worker) -> type[BaseHTTPRequestHandler]:
    """A `BaseHTTPRequestHandler` serving `worker` (subclass it to add to what it does)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_REQUEST_BYTES:
                status, out = 413, b""
            else:
                status, out = worker.handle(self.rfile.read(size), dict(self.headers))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
