"""`ports.PushConfigs` in memory: the DynamoDB configs' rules (aws/pushconfigs.py) under one lock.
A task holds at most `limit` configs: a new id past it is refused, the same config again writes
nothing, a changed one keeps its slot, a delete of one that is gone is a no-op. Configs are kept
as the table keeps them (JSON text with sorted keys) and listed in its order (its sort keys
`{turn}#{id}`, compared as strings)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from holdpoint.core.push import PushRecord

Task = tuple[str, str, str]


def _body(config: PushRecord) -> str:
    return json.dumps(config.body(), separators=(",", ":"), sort_keys=True)


@dataclass
class MemoryPushConfigs:
    tasks: dict[Task, dict[str, str]] = field(default_factory=dict)  # (tenant, session, turn) -> id -> body
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, tenant: str, session_id: str, turn_id: str, config: PushRecord, limit: int) -> bool:
        """Keep the config; False (nothing written) when it is new and the task holds `limit`."""
        with self._lock:
            task, config_id = (tenant, session_id, turn_id), config.id
            kept = self.tasks.get(task, {})
            if config_id not in kept and len(kept) >= limit:
                return False
            self.tasks.setdefault(task, kept)[config_id] = _body(config)
            return True

    def get(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> PushRecord | None:
        with self._lock:
            body = self.tasks.get((tenant, session_id, turn_id), {}).get(config_id)
        return PushRecord.of(json.loads(body), turn_id) if body is not None else None

    def list(self, tenant: str, session_id: str, turn_id: str | None = None) -> list[PushRecord]:
        with self._lock:
            rows = [(f"{turn}#{config_id}", turn, body) for (t, s, turn), kept in self.tasks.items()
                    if (t, s) == (tenant, session_id) and turn_id in (None, turn) for config_id, body in kept.items()]
        return [PushRecord.of(json.loads(body), turn) for _, turn, body in sorted(rows)]

    def delete(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> None:
        """Delete the config and give its slot back; a config that is gone is a no-op."""
        with self._lock:
            kept = self.tasks.get((tenant, session_id, turn_id), {})
            kept.pop(config_id, None)
            if not kept:
                self.tasks.pop((tenant, session_id, turn_id), None)
