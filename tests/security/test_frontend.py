"""The local front end answers like API Gateway HTTP API where API Gateway itself answers, over raw
HTTP (`requests` would normalise the probes): any method goes through route matching, a `#` in
the request target is a path character, and a burst of clients is queued, not reset. No probe
records anything."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from holdpoint_local.emulators.frontend import ApiGateway, FrontEnd
from holdpoint_local.provision import Route
from tests.stack import Api

NOT_FOUND = (404, {"message": "Not Found"})
CLIENTS = 48


@pytest.fixture
def items(stack: Any, api: Api) -> Callable[[], int]:
    """The number of items in the stack's table (after the `api` fixture declared its agent)."""
    ddb = stack.client("dynamodb")
    table = stack.env["TABLE_NAME"]
    return lambda: ddb.scan(TableName=table, Select="COUNT")["Count"]


def address(stack: Any) -> tuple[str, int]:
    url = urlsplit(stack.base_url)
    return url.hostname or "127.0.0.1", url.port or 80


def send(stack: Any, method: str, target: str, body: bytes = b"", auth: bool = True) -> tuple[int, Any]:
    """One request with the method and target exactly as given; the answer's status and JSON body."""
    host, port = address(stack)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        if auth:
            conn.putheader("Authorization", f"Bearer {stack.api_key}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        assert resp.getheader("content-type") == "application/json", (resp.status, data[:200])
        return resp.status, json.loads(data)
    finally:
        conn.close()


def test_any_method_goes_through_route_matching(stack: Any, items: Callable[[], int]) -> None:
    """Python's server answers a method it has no `do_X` for with an HTML 501; API Gateway matches
    routes on every method, and no route has these."""
    before = items()
    for method in ("TRACE", "QUERY", "CONNECT", "PROPFIND", "BREW"):
        for target in ("/v1/sessions", "/v1/interrupts", "/v1/agents/assistant", "/nope"):
            assert send(stack, method, target, b'{"type": "client.message"}') == NOT_FOUND, (method, target)
            assert send(stack, method, target, auth=False) == NOT_FOUND, (method, target)
    assert items() == before


def raw(stack: Any, request: bytes) -> tuple[int, Any]:
    """Send bytes as they are on a fresh connection; the status and JSON body of the answer."""
    with socket.create_connection(address(stack), timeout=30) as sock:
        sock.sendall(request)
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        return resp.status, json.loads(resp.read())


def test_body_framing_like_a_gateway(stack: Any, api: Api, items: Callable[[], int]) -> None:
    """A chunked body is read whole; a malformed or doubled framing is API Gateway's JSON 400, not a
    dropped connection, and records nothing."""
    auth = b"Authorization: Bearer " + stack.api_key.encode() + b"\r\n"
    head = b"PUT /v1/agents/chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + auth
    before = items()
    bad = b"Bad Request"
    assert raw(stack, head + b"Content-Length: abc\r\n\r\n{}") == (400, {"message": bad.decode()})
    assert raw(stack, head + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n") == (
        400, {"message": bad.decode()})
    assert raw(stack, head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n") == (400, {"message": bad.decode()})
    assert items() == before
    status, body = raw(stack, head + b"Transfer-Encoding: chunked\r\n\r\n6\r\n{\"mode\r\n8\r\nl\": \"m\"}\r\n0\r\n\r\n")
    assert (status, body) == (200, {"agent_id": "chunked", "agent": {"model": "m", "tools": []}})


def test_a_raw_hash_is_a_path_character(stack: Any, api: Api, items: Callable[[], int]) -> None:
    """A request target has no fragment: `frag#ment` is the whole (invalid) id, never `frag`."""
    before = items()
    status, body = send(stack, "PUT", "/v1/agents/frag#ment", json.dumps({"model": "m"}).encode())
    assert status == 400, body
    assert body["error"]["code"] == "validation_error" and body["error"]["param"] == "agent_id"
    status, body = send(stack, "GET", "/v1/agents/frag")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = send(stack, "GET", "/v1/sessions/ses#x")
    assert status == 404 and body["error"]["code"] == "not_found"
    assert send(stack, "GET", "/v1/interrupts#x") == NOT_FOUND
    assert items() == before


def test_a_burst_of_clients_is_answered(stack: Any, items: Callable[[], int]) -> None:
    """Many clients connecting at once are all queued and answered (no connection reset)."""
    host, port = address(stack)
    before = items()
    start = threading.Barrier(CLIENTS)
    answers: list[bytes] = []
    failures: list[str] = []
    waits: list[float] = []
    lock = threading.Lock()

    def client() -> None:
        try:
            start.wait(timeout=30)
            began = time.monotonic()
            with socket.create_connection((host, port), timeout=30) as sock:
                connected = time.monotonic() - began
                sock.sendall(b"GET /v1/agents/assistant HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                             b"Authorization: Bearer " + stack.api_key.encode() + b"\r\n\r\n")
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
            with lock:
                answers.append(data)
                waits.append(connected)
        except OSError as exc:
            with lock:
                failures.append(repr(exc))

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures, failures[:3]
    # A connect is the kernel's handshake only; one that took a second waited for a SYN retransmit
    # because the listen queue was full (other systems reset it instead).
    assert max(waits) < 0.9, sorted(waits)[-5:]
    assert len(answers) == CLIENTS
    for data in answers:
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 "), data[:200]
        assert json.loads(body)["agent_id"] == "assistant"
    assert items() == before


class Replies:
    """A stand-in function that returns whatever the test sets."""

    def __init__(self) -> None:
        self.result: Any = None

    def invoke(self, event: dict[str, Any]) -> Any:
        return self.result


def test_a_malformed_function_response_is_a_gateway_500() -> None:
    """API Gateway answers 500 `{"message"}` when a function's response cannot be sent as HTTP."""
    function = Replies()
    route = Route(method="GET", path="/reply", function="F", code_dir=Path("."), authorizer=None)
    server = FrontEnd(ApiGateway([route], {"F": function}), port=0).start()  # type: ignore[dict-item]
    stack = type("Bare", (), {"base_url": server.url, "api_key": "k"})()
    try:
        for bad in ({"statusCode": "teapot"}, {"statusCode": 42}, {"statusCode": 200, "body": "%%",
                                                                    "isBase64Encoded": True}):
            function.result = bad
            assert send(stack, "GET", "/reply") == (500, {"message": "Internal Server Error"}), bad
        function.result = {"statusCode": 201, "body": "{}", "headers": {"content-type": "application/json"}}
        assert send(stack, "GET", "/reply") == (201, {})
    finally:
        server.stop()
