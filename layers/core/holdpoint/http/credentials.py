"""Credentials at the edge: the `Authorization: Bearer` header (an API key, stored hashed, or a
short-lived client JWT) checked into a `Caller`, and that caller carried through API Gateway's
authorizer context (flat strings) to the handlers.

Only the authorizer loads `jwt` from here; the handlers read the context with `caller_of`.
This module imports nothing of the HTTP resolver, so the authorizer stays small.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from holdpoint.core.credentials import JWT_AUDIENCE, hash_key
from holdpoint.core.digits import parse_digits
from holdpoint.ports import Directory
from holdpoint.services.caller import Caller


def authenticate(authorization: str | None, store: Directory,
                 secret: Callable[[], str | None]) -> Caller | None:
    """`Bearer <api key>` or `Bearer <jwt>` (signed with `secret()`); None when neither checks out."""
    if not authorization or not authorization.lower().startswith("bearer "):
        return None
    token = authorization[7:].strip()
    if not token or len(token) > 4096:
        return None
    if token.count(".") == 2:
        return _client_token(token, secret)
    key_hash = hash_key(token)
    found = store.get_api_key(key_hash)
    if found is None:
        return None
    return Caller(tenant=found.tenant, subject=found.subject, origin=found.origin,
                  groups=groups_of(list(found.groups)), key_hash=key_hash)


def _client_token(token: str, secret: Callable[[], str | None]) -> Caller | None:
    """A client JWT (HS256, audience `holdpoint`): bound to its subject's own sessions."""
    import jwt  # the authorizer's alone: a handler that reads the context never loads PyJWT

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
                  groups=groups_of(claims.get("groups")), expires=int(claims["exp"]))


def context_of(caller: Caller) -> dict[str, str]:
    """The authorizer's context: flat strings, as API Gateway passes them on."""
    out = {"tenant": caller.tenant, "subject": caller.subject, "origin": caller.origin}
    if caller.session_id:
        out["session_id"] = caller.session_id
    if caller.own_only:
        out["own_only"] = "1"
    if caller.metadata:
        out["metadata"] = json.dumps(dict(caller.metadata), separators=(",", ":"))
    if caller.groups:
        out["groups"] = json.dumps(list(caller.groups), separators=(",", ":"))
    if caller.expires is not None:
        out["exp"] = str(caller.expires)
    if caller.key_hash:
        out["key_hash"] = caller.key_hash
    return out


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
        answer["context"] = context_of(caller)
    return answer


def caller_of(ctx: dict[str, Any]) -> Caller:
    """The caller an authorizer context (`context_of`) names."""
    return Caller(tenant=str(ctx["tenant"]), subject=str(ctx.get("subject") or ""),
                  origin=str(ctx.get("origin") or "client"), session_id=ctx.get("session_id") or None,
                  own_only=str(ctx.get("own_only", "")) in ("1", "true", "True"),
                  metadata=metadata_of(ctx.get("metadata")), groups=groups_of(ctx.get("groups")),
                  expires=parse_digits(ctx.get("exp")), key_hash=str(ctx.get("key_hash") or "") or None)


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
