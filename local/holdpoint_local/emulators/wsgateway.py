"""An API Gateway WebSocket API look-alike: the gateway holds the connections, and a function runs
only for a route: `$connect` (after the REQUEST authorizer's IAM policy), each message (routed by
its `action`, `$request.body.action`), `$disconnect`. It serves the `@connections` management API
that `PostToConnection` calls, delivering each frame to its socket (410 GoneException for one that
is gone), and API Gateway's limits: 32 KB frames, a 10-minute idle timeout, 2-hour connections,
29 s each for the authorizer and the `$connect` route (then 504).
A management call must be SigV4-signed by a caller whose IAM policies allow
`execute-api:ManageConnections` on the connection (the moto server checks the signed request as
it checks every other call, moto/iam.py fixes 23-24); any other is 403 ForbiddenException.

Nothing here runs while a connection is idle: `LocalFunction.invocations` does not move.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import logging
import os
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import boto3
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from .. import ACCOUNT_ID, FAKE_ENV, REGION, SHUTDOWN_POLL_SECONDS
from ..moto.iam import API_ID_HEADER
from ..provision import Provisioned
from .runtime import Function

log = logging.getLogger("holdpoint_local.emulators.wsgateway")

STAGE = "live"
MAX_FRAME_BYTES = 32 * 1024
MAX_MESSAGE_BYTES = 128 * 1024
IDLE_SECS = 600.0
LIFETIME_SECS = 7200.0
SWEEP_SECS = 30.0
ROUTE_WORKERS = 16
INTEGRATION_TIMEOUT_SECS = 29.0
"""How long API Gateway waits for the authorizer, and then for the `$connect` route, before it
answers the handshake 504: the handshake is held for both (the `websockets` server would close it
after its own 10 s, which a cold start can outlast)."""


@dataclass(frozen=True)
class LiveRoutes:
    """The WebSocket API as created: route key -> function, and the `$connect` authorizer's function."""

    api_id: str
    routes: dict[str, str]
    authorizer: str | None


def read_live(endpoint_url: str, prov: Provisioned) -> LiveRoutes | None:
    """The stack's WebSocket API, read back from moto's ApiGatewayV2 (None if the template has none)."""
    from ..provision import _function_of

    ws = [logical for logical, res in prov.template.get("Resources", {}).items()
          if res["Type"] == "AWS::ApiGatewayV2::Api" and res["Properties"].get("ProtocolType") == "WEBSOCKET"]
    if not ws:
        return None
    api = boto3.client("apigatewayv2", endpoint_url=endpoint_url, region_name=REGION,
                       aws_access_key_id=FAKE_ENV["AWS_ACCESS_KEY_ID"],
                       aws_secret_access_key=FAKE_ENV["AWS_SECRET_ACCESS_KEY"])
    api_id = prov.resources[ws[0]]
    routes: dict[str, str] = {}
    authorizer = None
    for route in api.get_routes(ApiId=api_id)["Items"]:
        integration = api.get_integration(ApiId=api_id, IntegrationId=route["Target"].split("/", 1)[1])
        routes[route["RouteKey"]] = _function_of(integration["IntegrationUri"], prov.functions)
        if route.get("AuthorizationType") == "CUSTOM":
            auth = api.get_authorizer(ApiId=api_id, AuthorizerId=route["AuthorizerId"])
            authorizer = _function_of(auth["AuthorizerUri"], prov.functions)
    return LiveRoutes(api_id=api_id, routes=routes, authorizer=authorizer)


@dataclass
class _Conn:
    id: str
    socket: ServerConnection
    connected_at: float
    source_ip: str
    user_agent: str
    authorizer: dict[str, Any] = field(default_factory=dict)
    last_active: float = field(default_factory=time.time)


def expired(connections: Iterable[_Conn], now: float) -> list[_Conn]:
    """What API Gateway closes at `now`: idle past `IDLE_SECS` (a message either way resets it: the
    client's, or a frame posted to it) or open past `LIFETIME_SECS`, however busy."""
    return [conn for conn in connections
            if now - conn.last_active > IDLE_SECS or now - conn.connected_at > LIFETIME_SECS]


def _epoch_ms(at: float) -> int:
    return int(at * 1000)


class WebSocketGateway:
    """The WebSocket server (its own asyncio loop in a thread) and the management API server."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, management_port: int = 0,
                 admits: Callable[[str], bool] | None = None) -> None:
        self.host = host
        self.admits = admits  # a peer's address -> whether it is one of the stack's (None: any that reaches it)
        self._sock = socket.create_server((host, port), backlog=1024)
        self._management = _Management((host, management_port), _ManagementHandler)
        self._management.daemon_threads = True
        self._management.gateway = self  # type: ignore[attr-defined]
        self.routes: LiveRoutes | None = None
        self.functions: dict[str, Function] = {}
        self.iam_endpoint = ""  # the moto server that authorises each management call
        self.connections: dict[str, _Conn] = {}
        self._pending: dict[int, _Conn] = {}
        self._loop = asyncio.new_event_loop()
        self._pool = ThreadPoolExecutor(ROUTE_WORKERS, thread_name_prefix="holdpoint-ws-route")
        self._threads: list[threading.Thread] = []
        self._server: Server | None = None
        self._stopped: asyncio.Event | None = None

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}/{STAGE}"

    @property
    def management_url(self) -> str:
        """What `HOLDPOINT_LIVE_ENDPOINT` names: the stage URL the management API lives under."""
        return f"http://{self.host}:{self._management.server_address[1]}/{STAGE}"

    # -- lifecycle ------------------------------------------------------------------
    def start(self, routes: LiveRoutes, functions: dict[str, Function], iam_endpoint: str) -> WebSocketGateway:
        self.routes, self.functions, self.iam_endpoint = routes, functions, iam_endpoint
        ready = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(ready,), name="holdpoint-ws", daemon=True),
                         threading.Thread(target=self._management.serve_forever, name="holdpoint-ws-mgmt",
                                          kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, daemon=True)]
        for thread in self._threads:
            thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._threads:
            self._management.shutdown()
        self._management.server_close()
        self._sock.close()
        for thread in self._threads:
            thread.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve(ready))

    async def _serve(self, ready: threading.Event) -> None:
        self._stopped = asyncio.Event()
        async with serve(self._session, sock=self._sock, process_request=self._handshake,
                         open_timeout=2 * INTEGRATION_TIMEOUT_SECS + 1, max_size=MAX_MESSAGE_BYTES,
                         ping_interval=None, compression=None) as server:
            self._server = server
            sweeper = asyncio.create_task(self._sweep())
            ready.set()
            await self._stopped.wait()
            sweeper.cancel()
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 10)

    async def _call(self, function: str, event: dict[str, Any]) -> Any:
        return await self._loop.run_in_executor(self._pool, self.functions[function].invoke, event)

    async def _integrate(self, function: str, event: dict[str, Any]) -> Any:
        """A handshake's call, given up (`TimeoutError`) after API Gateway's integration timeout."""
        return await asyncio.wait_for(self._call(function, event), INTEGRATION_TIMEOUT_SECS)

    # -- event shapes -----------------------------------------------------------------
    def _context(self, conn: _Conn, route_key: str, event_type: str, **extra: Any) -> dict[str, Any]:
        assert self.routes is not None
        now = time.time()
        ctx: dict[str, Any] = {
            "routeKey": route_key, "eventType": event_type, "connectionId": conn.id,
            "extendedRequestId": uuid.uuid4().hex[:16], "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000",
                                                                                    time.gmtime(now)),
            "messageDirection": "IN", "stage": STAGE, "connectedAt": _epoch_ms(conn.connected_at),
            "requestTimeEpoch": _epoch_ms(now), "identity": {"sourceIp": conn.source_ip, "userAgent": conn.user_agent},
            "requestId": uuid.uuid4().hex[:16], "domainName": f"{self.host}:{self.port}", "apiId": self.routes.api_id,
            **extra,
        }
        if conn.authorizer:
            ctx["authorizer"] = conn.authorizer
        return ctx

    # -- $connect -----------------------------------------------------------------------
    async def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        """API Gateway's `$connect`: the authorizer, then the route; any refusal ends the handshake."""
        assert self.routes is not None
        if self.admits is not None and not self.admits(str(connection.remote_address[0])):
            return connection.respond(403, "Forbidden\n")  # not the stack's own: no route to its functions
        path = urlsplit(request.path)
        if path.path.rstrip("/") != f"/{STAGE}":
            return connection.respond(404, "Not Found\n")
        headers = {k.lower(): v for k, v in request.headers.raw_items()}
        query = dict(parse_qsl(path.query, keep_blank_values=True))
        conn = _Conn(id=base64.b64encode(secrets.token_bytes(10)).decode(), socket=connection,
                     connected_at=time.time(), source_ip=str(connection.remote_address[0]),
                     user_agent=headers.get("user-agent", ""))
        shared = {"headers": headers, "multiValueHeaders": {k: [v] for k, v in headers.items()},
                  "queryStringParameters": query or None,
                  "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} or None}
        if self.routes.authorizer:
            refusal = await self._authorize(conn, shared)
            if refusal is not None:
                return connection.respond(*refusal)
        if "$connect" in self.routes.routes:
            event = {**shared, "requestContext": self._context(conn, "$connect", "CONNECT"), "isBase64Encoded": False}
            try:
                result = await self._integrate(self.routes.routes["$connect"], event)
            except TimeoutError:
                return connection.respond(504, "Endpoint request timed out\n")
            except Exception:
                log.exception("$connect raised")
                return connection.respond(500, "Internal Server Error\n")
            status = int((result or {}).get("statusCode", 200)) if isinstance(result, dict) else 200
            if not 200 <= status < 300:
                return connection.respond(status, "Forbidden\n")
        self._pending[id(connection)] = conn
        return None

    async def _authorize(self, conn: _Conn, shared: dict[str, Any]) -> tuple[int, str] | None:
        """Run the REQUEST authorizer: an Allow policy on the connect route admits, with its context."""
        assert self.routes is not None and self.routes.authorizer
        method_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT_ID}:{self.routes.api_id}/{STAGE}/$connect"
        event = {"type": "REQUEST", "methodArn": method_arn, **shared, "stageVariables": {},
                 "requestContext": self._context(conn, "$connect", "CONNECT")}
        try:
            answer = await self._integrate(self.routes.authorizer, event)
        except TimeoutError:
            return 504, "Endpoint request timed out\n"
        except Exception as exc:
            if str(exc) == "Unauthorized":
                return 401, "Unauthorized\n"
            log.exception("authorizer raised")
            return 500, "Internal Server Error\n"
        statements = ((answer or {}).get("policyDocument") or {}).get("Statement") or []
        allowed = any(s.get("Effect") == "Allow" and s.get("Resource") in (method_arn, "*") for s in statements)
        denied = any(s.get("Effect") == "Deny" for s in statements)
        if not allowed or denied:
            return 403, "Forbidden\n"
        conn.authorizer = {**{k: str(v) for k, v in (answer.get("context") or {}).items()},
                           "principalId": str(answer.get("principalId", ""))}
        return None

    # -- messages and $disconnect ------------------------------------------------------------
    async def _session(self, connection: ServerConnection) -> None:
        conn = self._pending.pop(id(connection))
        self.connections[conn.id] = conn
        try:
            async for message in connection:
                conn.last_active = time.time()
                await self._message(conn, message)
        except ConnectionClosed:
            pass
        finally:
            self.connections.pop(conn.id, None)
            await self._disconnect(conn)

    def _route_of(self, message: str | bytes) -> str | None:
        """`$request.body.action`, else `$default` (None when the API has neither); a message too
        deeply nested for Python's parser has no action either."""
        assert self.routes is not None
        try:
            body = json.loads(message)
        except (ValueError, RecursionError):
            body = None
        action = body.get("action") if isinstance(body, dict) else None
        if isinstance(action, str) and action in self.routes.routes and not action.startswith("$"):
            return action
        return "$default" if "$default" in self.routes.routes else None

    async def _message(self, conn: _Conn, message: str | bytes) -> None:
        route = self._route_of(message)
        if route is None:
            await conn.socket.send(json.dumps({"message": "Forbidden", "connectionId": conn.id}))
            return
        binary = isinstance(message, bytes)
        body = base64.b64encode(message).decode() if isinstance(message, bytes) else message
        event = {"requestContext": self._context(conn, route, "MESSAGE", messageId=uuid.uuid4().hex[:16]),
                 "body": body, "isBase64Encoded": binary}
        try:
            assert self.routes is not None
            await self._call(self.routes.routes[route], event)
        except Exception:
            log.exception("%s raised", route)
            await conn.socket.send(json.dumps({"message": "Internal server error", "connectionId": conn.id}))

    async def _disconnect(self, conn: _Conn) -> None:
        assert self.routes is not None
        if "$disconnect" not in self.routes.routes:
            return
        event = {"requestContext": self._context(conn, "$disconnect", "DISCONNECT", disconnectStatusCode=1000),
                 "isBase64Encoded": False}
        try:
            await self._call(self.routes.routes["$disconnect"], event)
        except Exception:
            log.exception("$disconnect raised")

    async def _sweep(self) -> None:
        """API Gateway closes a connection idle for 10 minutes, and any after 2 hours."""
        while True:
            await asyncio.sleep(SWEEP_SECS)
            for conn in expired(self.connections.values(), time.time()):
                await conn.socket.close(1001, "Going away")

    def sweep(self, now: float, among: set[str] | None = None) -> list[str]:
        """The sweep as of `now` (a test's way to let ten minutes or two hours pass), of the
        connections `among` names (all by default): the ids closed."""
        closing = expired([c for c in self.connections.values() if among is None or c.id in among], now)
        for conn in closing:
            asyncio.run_coroutine_threadsafe(conn.socket.close(1001, "Going away"), self._loop).result(timeout=10)
        return [conn.id for conn in closing]

    # -- the management API ---------------------------------------------------------------
    def post(self, connection_id: str, data: bytes) -> int:
        """PostToConnection: the frame on the socket; 410 when the connection is gone."""
        conn = self.connections.get(connection_id)
        if conn is None:
            return 410
        if len(data) > MAX_FRAME_BYTES:
            return 413
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            frame: str | bytes = data
        else:
            frame = text
        future = asyncio.run_coroutine_threadsafe(conn.socket.send(frame), self._loop)
        try:
            future.result(timeout=10)
        except ConnectionClosed:
            return 410
        conn.last_active = time.time()
        return 200

    def info(self, connection_id: str) -> dict[str, Any] | None:
        conn = self.connections.get(connection_id)
        if conn is None:
            return None
        return {"connectedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(conn.connected_at)),
                "lastActiveAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(conn.last_active)),
                "identity": {"sourceIp": conn.source_ip, "userAgent": conn.user_agent}}

    def close(self, connection_id: str) -> bool:
        conn = self.connections.get(connection_id)
        if conn is None:
            return False
        asyncio.run_coroutine_threadsafe(conn.socket.close(1000), self._loop).result(timeout=10)
        return True


def iam_refusal(endpoint: str, api_id: str, method: str, path: str, headers: Any, body: bytes) -> str | None:
    """Why IAM refuses this management call (None when it allows it): the caller's signed request
    goes as it came to the moto server (`endpoint`), which checks its signature and the caller's
    `execute-api:ManageConnections` on the connection of the API `api_id` (moto/iam.py fix 24)."""
    if not str(headers.get("Authorization") or "").startswith("AWS4-HMAC-SHA256 "):
        return "Missing Authentication Token"
    target = urlsplit(endpoint)
    conn = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():  # the signed Host among them
            if name.lower() not in ("content-length", "connection", "transfer-encoding", API_ID_HEADER.lower()):
                conn.putheader(name, value)
        conn.putheader(API_ID_HEADER, api_id)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        answer = conn.getresponse()
        text = answer.read().decode("utf-8", "replace")
    finally:
        conn.close()
    if answer.status < 300:
        return None
    message = text.partition("<Message>")[2].partition("</Message>")[0]
    return message or f"Forbidden (the IAM check answered {answer.status})"


class _Management(ThreadingHTTPServer):
    """The management API's server: a connection from a peer the gateway does not admit is closed."""

    def verify_request(self, request: Any, client_address: Any) -> bool:
        admits = self.gateway.admits  # type: ignore[attr-defined]
        return admits is None or bool(admits(str(client_address[0])))


class _ManagementHandler(BaseHTTPRequestHandler):
    """`POST/GET/DELETE /{stage}/@connections/{id}`, answered in the management API's rest-json
    shapes, each only for a signed request IAM allows (403 ForbiddenException otherwise)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    @property
    def gateway(self) -> WebSocketGateway:
        return self.server.gateway  # type: ignore[attr-defined,no-any-return]

    def _connection_id(self) -> str | None:
        prefix = f"/{STAGE}/@connections/"
        path = urlsplit(self.path).path
        return unquote(path[len(prefix):]) if path.startswith(prefix) and len(path) > len(prefix) else None

    def _answer(self, status: int, body: dict[str, Any] | None = None, error: str | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if error:
            self.send_header("x-amzn-ErrorType", error)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _gone(self) -> None:
        self._answer(410, {"message": "Connection is gone"}, "GoneException")

    def _allowed(self) -> tuple[str | None, bytes]:
        """The call's connection id and body, once IAM allows the call; an id of None when it was
        answered here (404 for a path that names no connection, 403 for a refused call)."""
        data = self.rfile.read(int(self.headers.get("content-length") or 0))
        connection_id = self._connection_id()
        if connection_id is None:
            self._answer(404, {"message": "Not Found"})
            return None, data
        gateway = self.gateway
        refusal = iam_refusal(gateway.iam_endpoint, gateway.routes.api_id if gateway.routes else "", self.command,
                              self.path, self.headers, data)
        if refusal is not None:
            self._answer(403, {"message": refusal}, "ForbiddenException")
            return None, data
        return connection_id, data

    def do_POST(self) -> None:  # noqa: N802 - the base class's naming
        connection_id, data = self._allowed()
        if connection_id is None:
            return
        status = self.gateway.post(connection_id, data)
        if status == 410:
            self._gone()
        elif status == 413:
            self._answer(413, {"message": "Message too long"}, "PayloadTooLargeException")
        else:
            self._answer(200)

    def do_GET(self) -> None:  # noqa: N802
        connection_id, _ = self._allowed()
        if connection_id is None:
            return
        info = self.gateway.info(connection_id)
        if info is None:
            self._gone()
        else:
            self._answer(200, info)

    def do_DELETE(self) -> None:  # noqa: N802
        connection_id, _ = self._allowed()
        if connection_id is None:
            return
        if self.gateway.close(connection_id):
            self._answer(204)
        else:
            self._gone()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base
        log.debug(format, *args)


def port_from_env(name: str = "HOLDPOINT_WS_PORT") -> int:
    return int(os.environ.get(name) or 0)
