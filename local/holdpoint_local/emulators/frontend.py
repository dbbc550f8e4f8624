"""An API Gateway HTTP API look-alike: route matching, the Lambda REQUEST authorizer (payload 2.0,
simple responses) and payload-2.0 proxy events, so the handlers see what they would see on AWS."""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote

from holdpoint.http.numbers import parse_digits

from .. import ACCOUNT_ID, REGION, SHUTDOWN_POLL_SECONDS
from ..provision import Route
from .runtime import Function

log = logging.getLogger("holdpoint_local.emulators.frontend")

MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit
LISTEN_BACKLOG = 128
"""Connections the kernel queues before the server accepts them: a burst of clients waits, not dropped."""
_ABSOLUTE_FORM = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/?]*")
_TEXT_TYPES = ("text/", "json", "xml", "javascript", "x-www-form-urlencoded", "yaml")


def _number(raw: str, *, hexadecimal: bool = False) -> int:
    """A Content-Length or chunk size: ASCII digits only, as API Gateway reads them (ValueError else)."""
    value = parse_digits(raw, hexadecimal=hexadecimal)
    if value is None:
        raise ValueError(f"not a number: {raw!r}")
    return value


@dataclass
class CompiledRoute:
    route: Route
    regex: re.Pattern[str]
    params: tuple[str, ...]
    specificity: tuple[int, int, int]


def compile_route(route: Route) -> CompiledRoute:
    """Turn "/v1/sessions/{session_id}" into a regex; greedy "{proxy+}" matches the rest of the path."""
    parts: list[str] = []
    params: list[str] = []
    greedy = 0
    for seg in route.path.strip("/").split("/"):
        m = re.fullmatch(r"\{([A-Za-z0-9_]+)(\+?)\}", seg)
        if m:
            params.append(m.group(1))
            if m.group(2):
                greedy = 1
                parts.append(f"(?P<{m.group(1)}>.+)")
            else:
                parts.append(f"(?P<{m.group(1)}>[^/]+)")
        else:
            parts.append(re.escape(seg))
    regex = re.compile("^/" + "/".join(parts) + "$")
    # API Gateway prefers literal segments over variables, variables over greedy, exact methods over ANY.
    return CompiledRoute(route, regex, tuple(params), (greedy, len(params), int(route.method == "ANY")))


class Router:
    def __init__(self, routes: list[Route]) -> None:
        self.routes = sorted((compile_route(r) for r in routes), key=lambda c: c.specificity)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for c in self.routes:
            if c.route.method not in (method, "ANY"):
                continue
            m = c.regex.match(path)
            if m:
                return c.route, {k: unquote(v) for k, v in m.groupdict().items()}
        return None


def _json_response(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def split_target(target: str) -> tuple[str, str]:
    """(path, query) of a request target. A target has no fragment (RFC 9112 3.2), so a raw `#`
    is an ordinary path character, not the end of the path; the absolute form drops its authority."""
    path, _, query = _ABSOLUTE_FORM.sub("", target, count=1).partition("?")
    return path or "/", query


def _is_text(content_type: str) -> bool:
    return not content_type or any(t in content_type.lower() for t in _TEXT_TYPES)


class ApiGateway:
    """Builds events and calls functions; independent of the HTTP server so tests can call it directly."""

    def __init__(
        self,
        routes: list[Route],
        functions: dict[str, Function],
        *,
        api_id: str = "local",
        domain_name: str = "127.0.0.1",
        cors: dict[str, Any] | None = None,
    ) -> None:
        self.router = Router(routes)
        self.functions = functions
        self.api_id = api_id
        self.domain_name = domain_name
        self.cors = cors or {}

    # -- event shapes -------------------------------------------------------------
    def _request_context(
        self, method: str, path: str, route_key: str, source_ip: str, user_agent: str, request_id: str
    ) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {
            "accountId": ACCOUNT_ID,
            "apiId": self.api_id,
            "domainName": self.domain_name,
            "domainPrefix": self.domain_name.split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": user_agent,
            },
            "requestId": request_id,
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        }

    def build_event(
        self,
        method: str,
        raw_path: str,
        raw_query: str,
        headers: dict[str, str],
        body: bytes,
        route: Route,
        path_params: dict[str, str],
        source_ip: str = "127.0.0.1",
    ) -> dict[str, Any]:
        """Payload format 2.0 proxy event (authorizer context is added after the authorizer ran)."""
        request_id = base64.b32encode(uuid.uuid4().bytes).decode().rstrip("=")[:16]
        cookies = [c.strip() for c in headers.pop("cookie", "").split(";") if c.strip()]
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route.route_key,
            "rawPath": raw_path,
            "rawQueryString": raw_query,
            "headers": headers,
        }
        if cookies:
            event["cookies"] = cookies
        query: dict[str, list[str]] = {}
        for key, value in parse_qsl(raw_query, keep_blank_values=True):
            query.setdefault(key, []).append(value)
        if query:
            event["queryStringParameters"] = {k: ",".join(v) for k, v in query.items()}
        event["requestContext"] = self._request_context(
            method, raw_path, route.route_key, source_ip, headers.get("user-agent", ""), request_id
        )
        if body:
            if _is_text(headers.get("content-type", "")):
                try:
                    event["body"] = body.decode("utf-8")
                    event["isBase64Encoded"] = False
                except UnicodeDecodeError:
                    event["body"] = base64.b64encode(body).decode()
                    event["isBase64Encoded"] = True
            else:
                event["body"] = base64.b64encode(body).decode()
                event["isBase64Encoded"] = True
        else:
            event["isBase64Encoded"] = False
        if path_params:
            event["pathParameters"] = path_params
        return event

    def build_authorizer_event(self, event: dict[str, Any], route: Route, identity: list[str]) -> dict[str, Any]:
        ctx = event["requestContext"]
        route_arn = (
            f"arn:aws:execute-api:{REGION}:{ACCOUNT_ID}:{self.api_id}/$default/"
            f"{ctx['http']['method']}{event['rawPath']}"
        )
        auth_event: dict[str, Any] = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": route_arn,
            "identitySource": identity,
            "routeKey": event["routeKey"],
            "rawPath": event["rawPath"],
            "rawQueryString": event["rawQueryString"],
            "headers": event["headers"],
            "requestContext": ctx,
        }
        for key in ("cookies", "queryStringParameters", "pathParameters"):
            if key in event:
                auth_event[key] = event[key]
        return auth_event

    # -- the request pipeline --------------------------------------------------
    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str = "127.0.0.1"
    ) -> dict[str, Any]:
        """Return a normalized response dict: statusCode, headers, body (str), isBase64Encoded.
        With a CorsConfiguration, API Gateway answers preflights itself and marks the answers to
        allowed origins; so does this."""
        origin = headers.get("origin")
        if self.cors and method == "OPTIONS" and origin and headers.get("access-control-request-method"):
            return self._preflight(origin)
        response = self._route(method, target, headers, body, source_ip)
        if origin and self._allowed(origin):
            response["headers"] = {**response.get("headers", {}), "access-control-allow-origin": origin,
                                   "vary": "origin"}
        return response

    def _allowed(self, origin: str) -> bool:
        origins = self.cors.get("AllowOrigins") or []
        return "*" in origins or origin in origins

    def _preflight(self, origin: str) -> dict[str, Any]:
        headers: dict[str, str] = {}
        if self._allowed(origin):
            headers = {"access-control-allow-origin": origin, "vary": "origin",
                       "access-control-allow-methods": ",".join(self.cors.get("AllowMethods") or []),
                       "access-control-allow-headers": ",".join(self.cors.get("AllowHeaders") or []),
                       "access-control-max-age": str(self.cors.get("MaxAge", 0))}
        return {"statusCode": 204, "headers": headers, "body": "", "isBase64Encoded": False}

    def _route(self, method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str) -> dict[str, Any]:
        raw_path, raw_query = split_target(target)
        matched = self.router.match(method, raw_path)
        if matched is None:
            return _json_response(404, {"message": "Not Found"})
        if len(body) > MAX_BODY_BYTES:
            return _json_response(413, {"message": "Request Entity Too Large"})
        route, params = matched
        event = self.build_event(method, raw_path, raw_query, headers, body, route, params, source_ip)
        if route.authorizer:
            identity = [headers[h] for h in route.identity_headers if headers.get(h)]
            if len(identity) != len(route.identity_headers) or not identity:
                return _json_response(401, {"message": "Unauthorized"})
            try:
                result = self.functions[route.authorizer].invoke(
                    self.build_authorizer_event(event, route, identity)
                )
            except Exception:
                log.exception("authorizer %s raised", route.authorizer)
                return _json_response(500, {"message": "Internal Server Error"})
            if not isinstance(result, dict) or not isinstance(result.get("isAuthorized"), bool):
                log.error("authorizer returned an invalid simple response: %r", result)
                return _json_response(500, {"message": "Internal Server Error"})
            if not result["isAuthorized"]:
                return _json_response(403, {"message": "Forbidden"})
            event["requestContext"]["authorizer"] = {"lambda": result.get("context") or {}}
        try:
            result = self.functions[route.function].invoke(event)
        except Exception:
            log.exception("%s raised on %s", route.function, route.route_key)
            return _json_response(500, {"message": "Internal Server Error"})
        try:
            response = self.normalize(result)
            if not 100 <= response["statusCode"] <= 599:
                raise ValueError(f"status {response['statusCode']}")
            if response["isBase64Encoded"]:
                base64.b64decode(response["body"], validate=True)
        except (TypeError, ValueError) as exc:  # what API Gateway answers a malformed function response
            log.error("%s returned a malformed response: %s", route.function, exc)
            return _json_response(500, {"message": "Internal Server Error"})
        return response

    @staticmethod
    def normalize(result: Any) -> dict[str, Any]:
        """Apply HTTP API's payload-2.0 response rules (a bare value becomes a 200 JSON body)."""
        if isinstance(result, dict) and "statusCode" in result:
            headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
            for name, values in (result.get("multiValueHeaders") or {}).items():
                headers[str(name)] = ", ".join(str(v) for v in values)
            body = result.get("body")
            return {
                "statusCode": int(result["statusCode"]),
                "headers": headers,
                "cookies": list(result.get("cookies") or []),
                "body": "" if body is None else (body if isinstance(body, str) else json.dumps(body)),
                "isBase64Encoded": bool(result.get("isBase64Encoded")),
            }
        body = result if isinstance(result, str) else json.dumps(result)
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": body,
                "isBase64Encoded": False}  # fmt: skip


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # Headers and body leave in two writes on a kept-alive connection: with Nagle on, the body
    # waits for the client's delayed ACK, ~40 ms on every response. API Gateway has no such stall.
    disable_nagle_algorithm = True

    def __getattr__(self, name: str) -> Any:
        """Every method, TRACE or QUERY as much as GET, goes through route matching as on API Gateway
        (BaseHTTPRequestHandler would answer a method without a `do_X` with an HTML 501)."""
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A request the server cannot parse gets a JSON `{"message"}`, not Python's HTML page."""
        self.close_connection = True
        self._write(_json_response(code, {"message": HTTPStatus(code).phrase}))

    def _serve(self) -> None:
        started = time.monotonic()
        try:
            body = self._read_body()
        except ValueError:  # a malformed Content-Length or chunk size, or both framings at once
            self.send_error(400)
            return
        if body is None:
            self._write(_json_response(413, {"message": "Request Entity Too Large"}))
            self.close_connection = True
            return
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            k = key.lower()
            headers[k] = f"{headers[k]},{value}" if k in headers else value
        host, port = self.server.server_address[:2]
        headers.setdefault("host", f"{host!s}:{port}")
        headers.setdefault("x-forwarded-for", self.client_address[0])
        headers.setdefault("x-forwarded-proto", "http")
        response = self.server.gateway.handle(self.command, self.path, headers, body, self.client_address[0])
        self._write(response)
        log.info(
            "%s %s -> %s (%.0f ms)", self.command, self.path, response["statusCode"],
            (time.monotonic() - started) * 1000,
        )  # fmt: skip

    def _read_body(self) -> bytes | None:
        """The body, sized or chunked; None when it is over API Gateway's limit (left unread)."""
        chunked = "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()
        if chunked and self.headers.get("Content-Length") is not None:
            raise ValueError("both Content-Length and chunked")
        if not chunked:
            length = _number(self.headers.get("Content-Length") or "0")
            return None if length > MAX_BODY_BYTES else self.rfile.read(length)
        body = b""
        while size := _number(self.rfile.readline(1024).split(b";")[0].strip().decode("latin-1"), hexadecimal=True):
            if len(body) + size > MAX_BODY_BYTES:
                return None
            body += self.rfile.read(size)
            self.rfile.readline(1024)
        while self.rfile.readline(65537).strip():  # trailer fields
            pass
        return body

    def _write(self, response: dict[str, Any]) -> None:
        raw = response.get("body") or ""
        data = base64.b64decode(raw) if response.get("isBase64Encoded") else raw.encode("utf-8")
        self.send_response(response["statusCode"])
        headers = {k.lower(): v for k, v in response.get("headers", {}).items()}
        for key, value in headers.items():
            if key not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(key, value)
        for cookie in response.get("cookies") or []:
            self.send_header("set-cookie", cookie)
        if "content-type" not in headers and data:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("apigw-requestid", uuid.uuid4().hex[:16])
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base
        log.debug(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG
    gateway: ApiGateway


class FrontEnd:
    """The HTTP server thread around an `ApiGateway`. The socket is bound at once, so its URL is known
    before the gateway's functions exist (the functions' environment names it); it serves from `start()`."""

    def __init__(self, gateway: ApiGateway | None = None, host: str = "127.0.0.1", port: int = 8787) -> None:
        self.gateway = gateway
        self._server = _Server((host, port), _RequestHandler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, gateway: ApiGateway | None = None) -> FrontEnd:
        self.gateway = gateway or self.gateway
        assert self.gateway is not None, "a FrontEnd serves an ApiGateway"
        self._server.gateway = self.gateway
        self._thread = threading.Thread(target=self._server.serve_forever, name="holdpoint-frontend",
                                        kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread:  # shutdown() waits for serve_forever, which runs only once started
            self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

