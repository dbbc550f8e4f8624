"""The caller of a request, as the authorizer identified it: what every use case checks. How a
caller is read from a credential or carried in API Gateway's context is the edge's
(`holdpoint.http.credentials`)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    groups: tuple[str, ...] = ()  # A2: approver groups (an API key's attribute, a token's claim)
    person: bool = False  # signed in through the tenant's identity provider: an approver, not a key
    # How the caller proved itself, not who it is (so not compared): the live API, authorized only
    # at `$connect`, checks them again on every message (docs/SECURITY.md, "Live events").
    expires: int | None = field(default=None, compare=False)  # a client token's `exp` (epoch seconds)
    key_hash: str | None = field(default=None, compare=False)  # an API key's stored hash

    def identity(self) -> dict[str, Any]:
        """The identity a session this caller starts records: the subject, its origin, and the
        metadata a client token carries."""
        return {"id": self.subject, "metadata": {**dict(self.metadata), "origin": self.origin}}

    def owner(self) -> str | None:
        """The end user an unbound client token is: a session it starts records it as its
        `end_user`, and it reaches only sessions whose `end_user` it is. (A bound token is limited
        to its one session instead.)"""
        return self.subject if self.own_only and not self.session_id else None

    def principal(self) -> str:
        """Who the caller is, with its kind: `user:NAME` (a client token) or `key:NAME` (an API key,
        or a person the tenant's identity provider signed in: both are names the tenant controls,
        as approver policies name them, A2), so what derives from it (an idempotency key's session,
        an MCP approvals session) is never shared by an end user and the key of the same name."""
        return f"user:{self.subject}" if self.own_only else f"key:{self.subject}"

    def owns(self, session_id: str, end_user: str | None) -> bool:
        """Whether a session (or its interrupt) started by `end_user` is within reach: an API key
        reaches every session of its tenant; a token bound to a session (the tenant's backend
        granted it) that session only; an unbound client token only what its own subject started
        with a client token, so an end user named `ann` never reaches what the API key `ann` started."""
        if self.session_id:
            return session_id == self.session_id
        return not self.own_only or (end_user is not None and end_user == self.subject)

    def require_key(self, what: str) -> None:
        """Tenant-level routes (agents, keys, tokens) are for API keys; a client token reaches only
        its own sessions (SECURITY.md: end user vs tenant)."""
        if self.own_only:
            raise Refusal("forbidden", f"a client token cannot {what}; use an API key")
        if self.person:
            raise Refusal("forbidden", f"a person signed in through the identity provider cannot {what}; "
                          "use an API key")

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

