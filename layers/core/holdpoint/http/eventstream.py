"""`text/event-stream` bodies (the WHATWG server-sent events format): what the event stream and
the AG-UI channel answer. API Gateway buffers a Lambda's answer, so each body is complete: the
client reads it, then asks again (an `EventSource` does that by itself, sending `Last-Event-ID`)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response

CONTENT_TYPE = "text/event-stream"
RETRY_MS = 100
"""How soon an `EventSource` reconnects after a body ends: the wait happens on the server."""


OPENAPI: dict[str, Any] = {"text/event-stream": {"schema": {
    "type": "object", "description": "one server-sent event: `data` is one JSON value on one line",
    "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"},
                   "retry": {"type": "integer"}}}}}
"""How a route documents an event-stream answer (per event, as OpenAPI tools read a stream)."""


def frame(data: Any, event_id: int | None = None) -> str:
    """One event: `id:` (when given) and a one-line `data:` of compact JSON."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


def comment(text: str) -> str:
    """A comment line: ignored by clients, it says the body is an answer and not a broken one."""
    return f": {text}\n\n"


def reply(body: str, *, retry: bool = True) -> Response[str]:
    prefix = f"retry: {RETRY_MS}\n\n" if retry else ""
    return Response(status_code=200, content_type=CONTENT_TYPE, body=prefix + body,
                    headers={"Cache-Control": "no-cache"})
