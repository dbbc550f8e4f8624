"""Who is calling: API keys (stored hashed) and short-lived client JWTs (HS256).

Only the authorizer and token minting import this module (and `jwt`); the handlers read the
caller the authorizer passed on, as a `holdpoint.services.caller.Caller`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jwt

from holdpoint.core.credentials import JWT_AUDIENCE, hash_key
from holdpoint.ports import SessionStore
from holdpoint.services.caller import Caller, groups_of, metadata_of


def authenticate(authorization: str | None, store: SessionStore,
                 secret: Callable[[], str | None]) -> Caller | None:
    """`Bearer <api key>` or `Bearer <jwt>` (signed with `secret()`); None when neither checks out."""
    if not authorization or not authorization.lower().startswith("bearer "):
        return None
    token = authorization[7:].strip()
    if not token or len(token) > 4096:
        return None
    if token.count(".") == 2:
        key = secret()
        if not key:
            return None
        try:
            claims = jwt.decode(token, key, algorithms=["HS256"], audience=JWT_AUDIENCE,
                                options={"require": ["exp", "sub", "tenant"]})
        except jwt.PyJWTError:
            return None
        return Caller(tenant=str(claims["tenant"]), subject=str(claims["sub"]), origin="client",
                      session_id=claims.get("session_id"), own_only=True, metadata=metadata_of(claims.get("md")),
                      groups=groups_of(claims.get("groups")))
    found = store.get_api_key(hash_key(token))
    if found is None:
        return None
    return Caller(tenant=found["tenant"], subject=found["subject"], origin=found["origin"],
                  groups=groups_of(found.get("groups")))


def mint_client_token(secret: str, tenant: str, subject: str, *, ttl_secs: int = 900,
                      session_id: str | None = None, metadata: dict[str, str] | None = None,
                      now: float | None = None, groups: list[str] | None = None) -> str:
    """A short-lived HS256 client token: audience `holdpoint`, bound to a subject (and a session),
    carrying the approver groups (A2) in the `groups` claim."""
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


def websocket_answer(caller: Caller | None, method_arn: str) -> dict[str, Any]:
    """The WebSocket API's `$connect` authorizer answer (it has no simple responses): an IAM
    policy on the connect route, with the caller's context, which API Gateway hands to every
    route of the connection."""
    effect = "Allow" if caller is not None else "Deny"
    answer: dict[str, Any] = {
        "principalId": caller.subject if caller is not None else "anonymous",
        "policyDocument": {"Version": "2012-10-17", "Statement": [
            {"Action": "execute-api:Invoke", "Effect": effect, "Resource": method_arn}]},
    }
    if caller is not None:
        answer["context"] = caller.context()
    return answer
