"""The caller of a request, as the authorizer identified it: what every handler checks, without
the token machinery (`jwt`) that only the authorizer needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from holdpoint.core.errors import Refusal


@dataclass(frozen=True)
class Caller:
    tenant: str
    subject: str
    origin: str
    session_id: str | None = None  # a client token may be bound to one session
    own_only: bool = False  # a client token touches only its subject's own sessions

    def context(self) -> dict[str, str]:
        out = {"tenant": self.tenant, "subject": self.subject, "origin": self.origin}
        if self.session_id:
            out["session_id"] = self.session_id
        if self.own_only:
            out["own_only"] = "1"
        return out

    @classmethod
    def from_context(cls, ctx: dict[str, Any]) -> Caller:
        return cls(tenant=str(ctx["tenant"]), subject=str(ctx.get("subject") or ""),
                   origin=str(ctx.get("origin") or "client"), session_id=ctx.get("session_id") or None,
                   own_only=str(ctx.get("own_only", "")) in ("1", "true", "True"))

    def owner(self) -> str | None:
        """The session owner this caller is limited to, if any."""
        return self.subject if self.own_only else None

    def require_key(self, what: str) -> None:
        """Tenant-level routes (agents, keys, tokens) are for API keys; a client token reaches only
        its own sessions (SECURITY.md: end user vs tenant)."""
        if self.own_only:
            raise Refusal("forbidden", f"a client token cannot {what}; use an API key")

    def require_unbound(self) -> None:
        """A token bound to one session cannot start others."""
        if self.session_id:
            raise Refusal("forbidden", f"this token is bound to session {self.session_id}; "
                           "it cannot start another")
