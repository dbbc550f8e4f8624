"""A local HTTP endpoint that answers POSTs from a script of (status, body), for worker transport
tests (a real socket, so the real `netguard` opener and `urllib` parse the answers); and
`send_json`, how the tests' other local servers answer JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, body: Any) -> None:
    """A 200 with `body` as JSON, its length given."""
    data = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def answering(answers: Iterable[tuple[int, bytes]]) -> ThreadingHTTPServer:
    """Started in a thread; each POST gets the next answer, then `200 {}`. Call `shutdown()`."""
    script = iter(answers)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers["Content-Length"]))
            code, body = next(script, (200, b"{}"))
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()  # shutdown waits one poll
    return server
