"""`ports.Frames` in memory: what the `@connections` management API does with a frame
(aws/frames.py). A frame reaches its connection as its JSON, so a follower never shares an object
with the sender; a gone connection (a closed one is gone too) answers False and keeps nothing.
It holds no sockets: a connection it was not told is gone (`gone`) is connected."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

from holdpoint.core.jsontypes import JsonObject


class MemoryFrames:
    """The frames delivered, in the order posted (`sent`), and the posts a gone connection refused."""

    def __init__(self, gone: Iterable[str] = ()) -> None:
        self.gone: set[str] = set(gone)
        self.sent: list[tuple[str, JsonObject]] = []
        self.refused: list[str] = []
        self.closed: list[str] = []
        self._lock = threading.Lock()

    def post(self, connection_id: str, frame: JsonObject) -> bool:
        """Deliver the frame's JSON; False (nothing delivered) when the connection is gone."""
        data: JsonObject = json.loads(json.dumps(frame, separators=(",", ":")))
        with self._lock:
            if connection_id in self.gone:
                self.refused.append(connection_id)
                return False
            self.sent.append((connection_id, data))
            return True

    def received(self, connection_id: str) -> list[JsonObject]:
        """What one connection was sent, in order."""
        with self._lock:
            return [frame for to, frame in self.sent if to == connection_id]

    def close(self, connection_id: str) -> None:
        """The socket is closed and the connection gone; closing a gone one again is no error."""
        with self._lock:
            self.closed.append(connection_id)
            self.gone.add(connection_id)
