"""The lifecycle event bus: EventBridge `PutEvents` on the deployment's bus (`EVENT_BUS_NAME`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from holdpoint.aws import clients
from holdpoint.ports import DeliveryFailed

SOURCE = "holdpoint"


class EventBus:
    def __init__(self, bus_name: str | None = None, client: Any = None) -> None:
        self.bus_name = bus_name or os.environ.get("EVENT_BUS_NAME", "")
        self.client = client or clients.client("events")

    def publish(self, detail_type: str, detail: Mapping[str, object]) -> None:
        """One entry, `source: holdpoint`; a refused entry raises (the stream record is retried)."""
        out = self.client.put_events(Entries=[{
            "Source": SOURCE, "DetailType": detail_type, "Detail": json.dumps(detail, separators=(",", ":")),
            "EventBusName": self.bus_name, "Resources": [],
        }])
        if out.get("FailedEntryCount"):
            entry = (out.get("Entries") or [{}])[0]
            raise DeliveryFailed(f"EventBridge refused the event: {entry.get('ErrorCode')} {entry.get('ErrorMessage')}")
