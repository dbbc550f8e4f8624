"""The protocols function's resolver: agents elsewhere reaching Holdpoint over their own protocols
(A2A's JSON-RPC, holdpoint.bridges.a2a.routes; MCP's, holdpoint.bridges.mcp.routes), whose bodies are
parsed by the route, so a request that is not JSON-RPC gets the protocol's error and not Holdpoint's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from holdpoint.bridges.a2a import routes as a2a
from holdpoint.bridges.mcp import routes as mcp
from holdpoint.core.errors import Refusal
from holdpoint.http.edge import refusal_reply
from holdpoint.http.limits import body_bytes
from holdpoint.http.resolver import handler_for, new_resolver


def build() -> APIGatewayHttpResolver:
    app = new_resolver(validate=False)
    app.include_router(a2a.router)
    app.include_router(mcp.router)
    return app


def handler(app: APIGatewayHttpResolver) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """`handler_for(app)` with the body limits answered in JSON-RPC: a body too deep or not UTF-8
    is a parse error (-32700: HTTP 200 for A2A, 400 for MCP); one over the size limit stays a 413,
    as A2A's own server answers."""
    inner = handler_for(app, json_body=False, hop="protocols")

    def serve(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            body_bytes(event)
        except Refusal as exc:
            if exc.code == "payload_too_large":
                return refusal_reply(exc)
            if str(event.get("rawPath") or "").startswith("/mcp/"):  # MCP sends its parse error as a 400
                return mcp.unreadable(exc.message)
            return a2a.unreadable(exc.message)
        return inner(event, context)

    return serve
