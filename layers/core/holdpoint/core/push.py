"""A push notification config as Holdpoint keeps it (PROTOCOL.md §8): a record of its own, with
no protocol model behind it, so the ports and the adapters that keep configs import only this
(the A2A bridge translates A2A's `TaskPushNotificationConfig` to and from it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from holdpoint.core.jsontypes import JsonObject


@dataclass(frozen=True, slots=True)
class PushAuth:
    """How a push's receiver authenticates it: `Authorization: {scheme} {credentials}`."""

    scheme: str
    credentials: str | None = None


@dataclass(frozen=True, slots=True)
class PushRecord:
    """A push notification config as Holdpoint keeps it (`ports.PushConfigs`): where a task's states
    are pushed, with the write-only token and credentials each push carries. `turn_id` is the
    task's, on a config read back; the stored body (`body`) never holds it."""

    id: str
    url: str
    token: str | None = None
    auth: PushAuth | None = None
    turn_id: str | None = None

    def body(self) -> JsonObject:
        """The stored JSON object: `{id, url, token?, authentication?}`, absent fields left out."""
        out: JsonObject = {"id": self.id, "url": self.url}
        if self.token is not None:
            out["token"] = self.token
        if self.auth is not None:
            auth: JsonObject = {"scheme": self.auth.scheme}
            if self.auth.credentials is not None:
                auth["credentials"] = self.auth.credentials
            out["authentication"] = auth
        return out

    @classmethod
    def of(cls, body: Mapping[str, Any], turn_id: str | None = None) -> PushRecord:
        """A stored body read back, as the config of the task `turn_id`."""
        auth = body.get("authentication")
        scheme = auth.get("scheme") if isinstance(auth, dict) else None
        token = body.get("token")
        return cls(str(body["id"]), str(body["url"]), None if token is None else str(token),
                   PushAuth(str(scheme), auth.get("credentials")) if scheme and isinstance(auth, dict) else None,
                   turn_id)
