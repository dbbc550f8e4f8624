"""`ports.NotifyChannel` in memory: each notification handed over for an entry is kept as its
receiver would have it (its JSON, with its links), in order; an entry marked to fail (`failing`)
is refused with `DeliveryFailed`, as a webhook's receiver answering 5xx is, and nothing is kept
for it. A retried delivery is kept again: receivers dedupe (notify/webhooks.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Interrupt
from holdpoint.ports import DeliveryFailed


class MemoryChannel:
    """The deliveries taken, `(event, entry, links)` in order."""

    def __init__(self, failing: Iterable[JsonObject] = ()) -> None:
        self.failing = list(failing)
        self.delivered: list[tuple[JsonObject, JsonObject, dict[str, str]]] = []
        self._lock = threading.Lock()

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject:
        """Nothing to make ahead: a webhook's receiver gets the notification as it is."""
        return {}

    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        if entry in self.failing:
            raise DeliveryFailed("the entry's receiver refused the notification (marked to fail)")
        kept: JsonObject = json.loads(json.dumps(event, separators=(",", ":")))
        with self._lock:
            self.delivered.append((kept, json.loads(json.dumps(entry)), dict(links)))
