"""API Gateway's `@connections` management API (PostToConnection, DeleteConnection), at the WebSocket API's stage
URL (`HOLDPOINT_LIVE_ENDPOINT`, template.yaml)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.errors import Refused
from holdpoint.ports import Throttled, Unavailable

LIVE_ENV = "HOLDPOINT_LIVE_ENDPOINT"
MAX_FRAME_BYTES = 32 * 1024
"""API Gateway's WebSocket frame size limit."""

log = logging.getLogger("holdpoint.aws.frames")


def endpoint() -> str:
    return os.environ.get(LIVE_ENV, "")


class ManagementFrames:
    """`ports.Frames` on the management API: one PostToConnection per frame."""

    def __init__(self, endpoint_url: str | None = None, client: Any = None) -> None:
        self.endpoint_url = endpoint_url or endpoint()
        self.client = clients.refusing(client) if client is not None else clients.client(
            "apigatewaymanagementapi", endpoint_url=self.endpoint_url)

    def post(self, connection_id: str, frame: Mapping[str, object]) -> bool:
        """Send the frame; False when the connection is gone (410). Any other failure is logged
        and the frame is lost to this connection: the client sees the gap at its next event."""
        data = json.dumps(frame, separators=(",", ":")).encode()
        try:
            self.client.post_to_connection(ConnectionId=connection_id, Data=data)
        except Refused as exc:
            if exc.code == "GoneException":
                return False
            log.warning("post to %s failed: %s", connection_id, exc)
        except (Throttled, Unavailable) as exc:
            log.warning("post to %s failed: %s", connection_id, exc)
        return True

    def close(self, connection_id: str) -> None:
        """DeleteConnection; a connection already gone is closed enough."""
        try:
            self.client.delete_connection(ConnectionId=connection_id)
        except Refused as exc:
            if exc.code != "GoneException":
                log.warning("closing %s failed: %s", connection_id, exc)
        except (Throttled, Unavailable) as exc:
            log.warning("closing %s failed: %s", connection_id, exc)
