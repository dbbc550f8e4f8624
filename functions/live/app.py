"""WebSocket API Lambda: `$connect` (after the authorizer), `$disconnect`, `subscribe`, `$default`."""

from __future__ import annotations

from typing import Any

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint import tracing
    from holdpoint.http.live import handle


@tracing.capture
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
