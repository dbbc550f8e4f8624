"""The caller of a request, as the authorizer identified it: what every handler checks, without
the token machinery (`jwt`) that only the authorizer needs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from holdpoint.core.errors import Refusal

MACHINE_ORIGINS = ("machine", "operator")


@dataclass(frozen=True)
class Caller:
    tenant: str
    subject: str
    origin: str
    session_id: str | None = None  # a client token may be bound to one session
    own_only: bool = False  # a client token touches only its subject's own sessions
    metadata: tuple[tuple[str, str], ...] = ()  # a client token's identity metadata, as its issuer set it
    groups: tuple[str, ...] = ()  # A2: approver groups (an API key's attribute, a client token's claim)

    def context(self) -> dict[str, str]:
        """The authorizer's context: flat strings, as API Gateway passes them on."""
        out = {"tenant": self.tenant, "subject": self.subject, "origin": self.origin}
        if self.session_id:
            out["session_id"] = self.session_id
        if self.own_only:
            out["own_only"] = "1"
        if self.metadata:
            out["metadata"] = json.dumps(dict(self.metadata), separators=(",", ":"))
        if self.groups:
            out["groups"] = json.dumps(list(self.groups), separators=(",", ":"))
        return out

    @classmethod
    def from_context(cls, ctx: dict[str, Any]) -> Caller:
        return cls(tenant=str(ctx["tenant"]), subject=str(ctx.get("subject") or ""),
                   origin=str(ctx.get("origin") or "client"), session_id=ctx.get("session_id") or None,
                   own_only=str(ctx.get("own_only", "")) in ("1", "true", "True"),
                   metadata=metadata_of(ctx.get("metadata")), groups=groups_of(ctx.get("groups")))

    def identity(self) -> dict[str, Any]:
        """The identity a session this caller starts records: the subject, its origin, and the
        metadata a client token carries."""
        return {"id": self.subject, "metadata": {**dict(self.metadata), "origin": self.origin}}

    def owner(self) -> str | None:
        """The session owner this caller is limited to, if any."""
        return self.subject if self.own_only else None

    def require_key(self, what: str) -> None:
        """Tenant-level routes (agents, keys, tokens) are for API keys; a client token reaches only
        its own sessions (SECURITY.md: end user vs tenant)."""
        if self.own_only:
            raise Refusal("forbidden", f"a client token cannot {what}; use an API key")

    def require_machine(self, what: str) -> None:
        """Routes a tenant's backend calls (minting tokens, a worker's answers): an API key of
        origin machine or operator, never a client token or a client key."""
        self.require_key(what)
        if self.origin not in MACHINE_ORIGINS:
            raise Refusal("forbidden", f"only {' or '.join(MACHINE_ORIGINS)} keys {what}, not a {self.origin} key")

    def require_unbound(self) -> None:
        """A token bound to one session cannot start others."""
        if self.session_id:
            raise Refusal("forbidden", f"this token is bound to session {self.session_id}; "
                           "it cannot start another")


def _decoded(raw: Any) -> Any:
    """A claim as given, or as the authorizer context carries it (a JSON string); None if unreadable."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


def groups_of(raw: Any) -> tuple[str, ...]:
    """Approver groups from a token claim, a key's attribute or the authorizer context: strings
    only, anything else is no group."""
    raw = _decoded(raw)
    if not isinstance(raw, list):
        return ()
    return tuple(sorted({g for g in raw if isinstance(g, str) and g}))


def metadata_of(raw: Any) -> tuple[tuple[str, str], ...]:
    """Identity metadata from a token claim or the authorizer context."""
    raw = _decoded(raw)
    if not isinstance(raw, dict):
        return ()
    return tuple((str(k), str(v)) for k, v in sorted(raw.items()))
