"""Client tokens for browsers: a tenant's backend (a machine or operator key) mints a short-lived
token that reaches only its end user's own sessions, without the admin CLI."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from holdpoint.core.credentials import JWT_AUDIENCE
from holdpoint.core.errors import Refusal
from holdpoint.core.state import iso
from holdpoint.ports import Clock, Sessions
from holdpoint.services.caller import Caller


def issue(store: Sessions, secret: Callable[[], str | None], caller: Caller, subject: str, *,
          ttl_seconds: int, session_id: str | None = None, metadata: dict[str, str] | None = None,
          groups: list[str] | None = None, clock: Clock = time.time) -> dict[str, Any]:
    """`{token, expires_at}` for the end user `subject`, bound to `session_id` when given: the
    tenant's backend grants that user one session of its tenant, whoever started it (404 when the
    tenant has no such session)."""
    caller.require_machine("mint client tokens")
    if session_id and not store.session_exists(caller.tenant, session_id):
        raise Refusal("not_found", f"session {session_id} not found for {subject[:64]}", "session_id")
    key = secret()
    if not key:
        raise RuntimeError("the deployment has no signing secret (JWT_SECRET_ARN)")
    now = clock()
    token = mint_client_token(key, caller.tenant, subject, ttl_secs=ttl_seconds, session_id=session_id,
                              metadata=metadata, now=now, groups=groups)
    return {"token": token, "expires_at": iso(int(now) + ttl_seconds)}


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
