"""Credentials at the edge: the `Authorization: Bearer` header (an API key, stored hashed, a
short-lived client JWT, or a token of the tenant's identity provider) checked into a `Caller`,
and that caller carried through API Gateway's authorizer context (flat strings) to the handlers.

Only the authorizer loads `jwt` and the providers' keys (`outbound.signing_keys`) from here;
the handlers read the context with `caller_of`. This module imports nothing of the HTTP
resolver, so the authorizer stays small.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from holdpoint.core.credentials import JWT_AUDIENCE, hash_key
from holdpoint.core.digits import parse_digits
from holdpoint.core.identity import ALGORITHMS, MAX_ISSUER_CHARS, MAX_TOKEN_CHARS, audiences, signed_in
from holdpoint.ports import Principals
from holdpoint.services.caller import Caller

if TYPE_CHECKING:  # the authorizer's alone: the handlers that read the context never load it
    from holdpoint.outbound.signing_keys import SigningKeys


def authenticate(authorization: str | None, store: Principals,
                 secret: Callable[[], str | None], keys: SigningKeys | None = None) -> Caller | None:
    """`Bearer <api key>`, `Bearer <client jwt>` (HS256, signed with `secret()`) or `Bearer <id or
    access token>` of a tenant's identity provider (RS256 or ES256, checked with the provider's
    `keys`); None when none checks out."""
    if not authorization or not authorization.lower().startswith("bearer "):
        return None
    token = authorization[7:].strip()
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    if token.count(".") == 2:
        return _signed_token(token, store, secret, keys)
    key_hash = hash_key(token)
    found = store.get_api_key(key_hash)
    if found is None:
        return None
    return Caller(tenant=found.tenant, subject=found.subject, origin=found.origin,
                  groups=groups_of(list(found.groups)), key_hash=key_hash)


def _signed_token(token: str, store: Principals, secret: Callable[[], str | None],
                  keys: SigningKeys | None) -> Caller | None:
    """A JWT by its header's algorithm: HS256 is a client token, RS256 and ES256 an identity
    provider's; any other (`none` included) is refused unread."""
    import jwt

    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return None
    alg = header.get("alg")
    if alg == "HS256":
        return _client_token(token, secret)
    if alg in ALGORITHMS and keys is not None and isinstance(header.get("kid"), str):
        return _provider_token(token, str(alg), str(header["kid"]), store, keys)
    return None


def _provider_token(token: str, alg: str, kid: str, store: Principals, keys: SigningKeys) -> Caller | None:
    """An identity provider's token: its unverified `iss` and audience find the one tenant that
    declared that provider (none: refused with no fetch, so a token cannot make the authorizer
    dial anything), then the declared provider's key checks the signature, `iss` and `exp`, and
    `core.identity.signed_in` the rest. The person is an approver of the operator origin."""
    import jwt

    from holdpoint.outbound.signing_keys import KeysUnavailable

    try:
        unverified = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    issuer, named = unverified.get("iss"), audiences(unverified)
    if not isinstance(issuer, str) or len(issuer) > MAX_ISSUER_CHARS or named is None:
        return None
    found = next((f for f in (store.provider_for(issuer, aud) for aud in named) if f is not None), None)
    if found is None:
        return None
    tenant, provider = found
    try:
        key = keys.key(provider, kid)
    except KeysUnavailable:
        return None
    if key is None or key.algorithm_name != alg:
        return None
    try:
        claims = jwt.decode(token, key, algorithms=[alg], issuer=provider.issuer,
                            options={"require": ["exp", "iss"], "verify_aud": False})
    except jwt.PyJWTError:
        return None
    who = signed_in(claims, provider)
    if who is None:
        return None
    return Caller(tenant=tenant, subject=who.subject, origin="operator", groups=groups_of(who.groups),
                  expires=who.expires, person=True)


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
    if caller.person:
        out["person"] = "1"
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
                  person=is_person(ctx),
                  metadata=metadata_of(ctx.get("metadata")), groups=groups_of(ctx.get("groups")),
                  expires=parse_digits(ctx.get("exp")), key_hash=str(ctx.get("key_hash") or "") or None)


def is_person(ctx: dict[str, Any]) -> bool:
    """Whether an authorizer context (`context_of`) is a person's, signed in through the identity provider."""
    return str(ctx.get("person", "")) == "1"


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
