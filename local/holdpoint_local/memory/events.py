"""`ports.EventPublisher` in memory: the lifecycle events as the EventBridge bus takes them
(aws/events.py), in the order published, each detail kept as its JSON so a later change to the
caller's object changes nothing published. An entry without a detail type is refused with
`DeliveryFailed` and nothing is kept, as EventBridge refuses it (`InvalidArgument`)."""

from __future__ import annotations

import json
import threading

from holdpoint.core.jsontypes import JsonObject
from holdpoint.ports import DeliveryFailed


class MemoryEventBus:
    """The bus's events, `(detail_type, detail)` in the order published."""

    def __init__(self) -> None:
        self.published: list[tuple[str, JsonObject]] = []
        self._lock = threading.Lock()

    def publish(self, detail_type: str, detail: JsonObject) -> None:
        if not detail_type:
            raise DeliveryFailed("the bus refused the event: InvalidArgument (a detail type is required)")
        kept: JsonObject = json.loads(json.dumps(detail, separators=(",", ":")))
        with self._lock:
            self.published.append((detail_type, kept))
