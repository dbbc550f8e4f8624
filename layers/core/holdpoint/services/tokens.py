"""Client tokens for browsers: a tenant's backend (a machine or operator key) mints a short-lived
token that reaches only its end user's own sessions, without the admin CLI."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from holdpoint.core.credentials import JWT_AUDIENCE
from holdpoint.core.errors import Refusal
from holdpoint.core.protocol import ClientTokenBody
from holdpoint.core.state import iso
from holdpoint.ports import Clock, SessionStore
from holdpoint.services.caller import Caller


def issue(store: SessionStore, secret: Callable[[], str | None], caller: Caller, body: ClientTokenBody,
          clock: Clock = time.time) -> dict[str, Any]:
    """`{token, expires_at}` for `body.identity`, bound to `body.session_id` when given (which must
    be a session that identity owns: 404 otherwise)."""
    caller.require_machine("mint client tokens")
    if body.session_id and not store.session_exists(caller.tenant, body.session_id, owner=body.identity.id):
        raise Refusal("not_found", f"session {body.session_id} not found for {body.identity.id[:64]}", "session_id")
    key = secret()
    if not key:
        raise RuntimeError("the deployment has no signing secret (JWT_SECRET_ARN)")
    now = clock()
    token = mint_client_token(key, caller.tenant, body.identity.id, ttl_secs=body.ttl_seconds,
                              session_id=body.session_id, metadata=body.identity.metadata, now=now,
                              groups=body.identity.groups)
    return {"token": token, "expires_at": iso(int(now) + body.ttl_seconds)}


def mint_client_token(secret: str, tenant: str, subject: str, *, ttl_secs: int = 900,
                      session_id: str | None = None, metadata: dict[str, str] | None = None,
                      now: float | None = None, groups: list[str] | None = None) -> str:
    """A short-lived HS256 client token: audience `holdpoint`, bound to a subject (and a session),
    carrying the approver groups (A2) in the `groups` claim."""
    import jwt  # PyJWT only when a token is minted

    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {"tenant": tenant, "sub": subject, "aud": JWT_AUDIENCE, "iat": issued,
                              "exp": issued + ttl_secs}
    if session_id:
        claims["session_id"] = session_id
    if metadata:
        claims["md"] = metadata
    if groups:
        claims["groups"] = list(groups)
    return jwt.encode(claims, secret, algorithm="HS256")
