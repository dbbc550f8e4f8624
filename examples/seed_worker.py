"""The seed's `decide` as a standalone HTTPS-style worker (standard library only).

Run it with `python examples/seed_worker.py --port 9001` and point an agent's
`worker.url` at it; set `HOLDPOINT_WORKER_SECRET` on both sides to sign and verify.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


def signature_ok(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """HMAC-SHA256 over `timestamp.body`, five minutes of clock skew at most."""
    try:
        if abs(time.time() - float(timestamp)) > 300:
            return False
    except ValueError:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


LATER = object()
"""What `answer` returns to take a decision and answer it later: the worker replies 202 and sends
its answer to `POST /v1/workers/submit` (PROTOCOL.md §2.9)."""


class WorkerHandler(BaseHTTPRequestHandler):
    secret: str | None = None
    seen: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] | None = None  # the open calls of the request being answered

    def answer(self, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> Any:
        return decide(trigger, proposed, self.calls)

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.secret and not signature_ok(self.secret, self.headers.get("X-Holdpoint-Timestamp", ""), body,
                                            self.headers.get("X-Holdpoint-Signature", "")):
            self.send_response(401)
            self.end_headers()
            return
        request = json.loads(body)
        self.seen.append(request)
        self.calls = request.get("calls")
        decided = self.answer(request["trigger"], request.get("proposed"))
        if decided is LATER:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        answer = json.dumps(decided).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        return


def serve(port: int = 0, secret: str | None = None, base: type[WorkerHandler] = WorkerHandler,
          host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, list[dict[str, Any]]]:
    """Start the worker (`base`, or a subclass with its own `answer`) in a thread on `host` (where the
    engine reaches it: loopback in process, Docker's bridge address for functions in containers);
    returns the server (for its port) and the requests it saw."""
    handler = type("Handler", (base,), {"secret": secret, "seen": []})
    server = ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler.seen


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9001)
    args = parser.parse_args()
    server, _ = serve(args.port, os.environ.get("HOLDPOINT_WORKER_SECRET"))
    print(f"seed worker on http://127.0.0.1:{server.server_address[1]}/")
    threading.Event().wait()
