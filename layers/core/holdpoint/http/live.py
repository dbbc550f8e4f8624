"""The WebSocket API's edge (docs/PROTOCOL.md, "Live events"): API Gateway's WebSocket events to
`services.live`, and the `$connect` authorizer's IAM-policy answer.

A message is JSON with `action` (the route selection expression is `$request.body.action`):
`{"action": "subscribe", "session_ids": [...], "after_seq": 0}`; `after_seq` may instead map each
session id to its own; `"format": "ag-ui"` asks for AG-UI events (`ag-ui` frames) instead of the
log's events. A bad message is answered with an `error` frame naming the field.
"""

from __future__ import annotations

import logging
from typing import Any

from holdpoint.assembly import get_live
from holdpoint.core.errors import QuotaExceeded, Refusal
from holdpoint.http.credentials import caller_of
from holdpoint.http.edge import load_refusal
from holdpoint.http.limits import body_bytes, strict_body
from holdpoint.ports import Throttled, Unavailable
from holdpoint.services.live import error_frame

log = logging.getLogger(__name__)

def handle(event: dict[str, Any]) -> dict[str, Any]:
    """One WebSocket route invocation: `$connect`, `$disconnect`, `subscribe` or `$default`. AWS
    refusing a call about load refuses the handshake with 503, or answers a subscribe with a
    `throttled`/`unavailable` error frame (`retry_after`): subscribing again is safe, as a
    subscribe writes only what it would write the same way again. A `$disconnect` refused is
    left to the connection item's `ttl`."""
    ctx = event.get("requestContext") or {}
    route, connection_id = ctx.get("routeKey"), str(ctx.get("connectionId") or "")
    try:
        return _route(event, ctx, route, connection_id)
    except (Throttled, Unavailable) as exc:
        log.warning("%s refused by AWS: %s", route, exc)
        if route == "$disconnect":
            return {"statusCode": 200}
        if route != "$connect":
            refusal = load_refusal(exc)
            get_live().frames.post(connection_id, error_frame(refusal.code, refusal.message, "session_ids",
                                                              retry_after=refusal.retry_after))
        return {"statusCode": 503}


def _route(event: dict[str, Any], ctx: dict[str, Any], route: Any, connection_id: str) -> dict[str, Any]:
    connected_at = float(ctx.get("connectedAt") or 0) / 1000
    live = get_live()
    if route == "$disconnect":
        live.disconnect(connection_id)
        return {"statusCode": 200}
    caller = caller_of(ctx.get("authorizer") or {})
    if route == "$connect":
        try:
            live.connect(caller, connection_id, connected_at)
        except QuotaExceeded:
            return {"statusCode": 429}  # API Gateway refuses the handshake
        return {"statusCode": 200}
    try:  # the HTTP edge's limits and strict parser: size, depth, no duplicate keys, no NaN
        body = strict_body(body_bytes(event))
    except Refusal as exc:
        live.frames.post(connection_id, error_frame("invalid_request", exc.message, exc.param or "body"))
        return {"statusCode": 400}
    if route != "subscribe" or not isinstance(body, dict):
        live.frames.post(connection_id, error_frame("invalid_request", "unknown action; send subscribe", "action"))
        return {"statusCode": 400}
    from holdpoint.http.subscribe import parse  # pydantic loads for a subscribe, not for a handshake

    message = parse(body)
    if isinstance(message, tuple):
        live.frames.post(connection_id, error_frame("invalid_request", *message))
        return {"statusCode": 400}
    live.subscribe(caller, connection_id, connected_at, message.after(), message.format)
    return {"statusCode": 200}
