"""Attacks on sign-in with the tenant's identity provider, over HTTP on the local stack (the real
authorizer, a Cognito user pool on moto, docs/SECURITY.md "Identity providers"). A refused token
is API Gateway's 403 `{"message": "Forbidden"}`: the authorizer said no, and no route ran.

Each attack has a control beside it where the refusal could be mistaken for something else: the
same token or forgery with only the attacked part right is accepted."""

from __future__ import annotations

import time
from typing import Any

import requests

from tests.oidc import (
    Pool,
    foreign_rsa_key,
    forged,
    make_pool,
    moto_pool_key,
    operator,
    person,
    serve_issuer,
    unsigned,
    with_claims,
)
from tests.security.probes import refusal, table_count
from tests.stack import Api, declare_agent

INBOX = "/v1/interrupts?status=open"


def _declared(stack: Any, tenant: str | None = None, name: str = "approvers") -> Pool:
    pool = make_pool(stack, name)
    operator(stack, tenant).ok("PUT", "/v1/identity-provider", pool.declaration())
    return pool


def _refused(stack: Any, token: str) -> None:
    resp = requests.get(stack.base_url + INBOX, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert resp.status_code == 403 and resp.json() == {"message": "Forbidden"}, (resp.status_code, resp.text[:300])


def _accepted(stack: Any, token: str) -> None:
    assert person(stack, token).req("GET", INBOX).status_code == 200


def _claims(pool: Pool, **changes: Any) -> dict[str, Any]:
    """An ID token's claims as the pool would issue them to its declared client."""
    now = int(time.time())
    return {"iss": pool.issuer, "sub": "forged-user", "aud": pool.client_id, "token_use": "id",
            "iat": now, "exp": now + 600, "cognito:groups": ["finance"], **changes}


def test_oidc_attack_another_tenants_issuer_acts_only_in_its_own_tenant(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Mallory signs in to the pool tenant `other` declared: her token is `other`'s, and this
    tenant's sessions and interrupts are not found (404), never answered."""
    declare_agent(api, worker[0], approval={"groups": ["finance"]})
    mine = _declared(stack)
    theirs = _declared(stack, "other", "other-approvers")
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    token = theirs.sign_in("mallory", theirs.user("mallory", ("finance",)))["IdToken"]
    mallory = person(stack, token)
    before = table_count(stack)
    refusal(mallory.resume(sid, iid, {"approved": True}), 404, code="not_found")
    refusal(mallory.req("GET", f"/v1/sessions/{sid}"), 404, code="not_found")
    assert mallory.ok("GET", INBOX)["interrupts"] == []
    assert table_count(stack) == before
    # Her token relabelled with this tenant's issuer and client no longer matches its signature
    # (moto signs every pool with one key, so only the signature over the claims stands between them).
    _refused(stack, with_claims(token, iss=mine.issuer, aud=mine.client_id))
    assert api.view(sid)["status"] == "interrupted"


def test_oidc_attack_an_expired_token_is_refused(stack: Any) -> None:
    pool = _declared(stack)
    key = moto_pool_key()
    _accepted(stack, forged(_claims(pool), key))  # the control: the pool's own key, in date
    _refused(stack, forged(_claims(pool, exp=int(time.time()) - 5), key))


def test_oidc_attack_alg_none_is_refused(stack: Any) -> None:
    pool = _declared(stack)
    _refused(stack, unsigned(_claims(pool)))
    # HS256 is only ever the client tokens' (the deployment's own secret), never a provider's.
    _refused(stack, forged(_claims(pool), "a shared secret of thirty-two bytes", alg="HS256"))


def test_oidc_attack_a_token_signed_by_a_foreign_key_with_the_pools_kid(stack: Any) -> None:
    pool = _declared(stack)
    _refused(stack, forged(_claims(pool), foreign_rsa_key(), kid="dummy"))


def test_oidc_attack_edited_groups_break_the_signature(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    declare_agent(api, worker[0], approval={"groups": ["finance"]})
    pool = _declared(stack)
    token = pool.sign_in("eve", pool.user("eve", ("staff",)))["IdToken"]
    _accepted(stack, token)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    refusal(person(stack, token).resume(sid, interrupt["interrupt_id"], {"approved": True}), 403,
            code="not_an_approver")
    _refused(stack, with_claims(token, **{"cognito:groups": ["finance"]}))
    assert api.view(sid)["status"] == "interrupted"


def test_oidc_attack_a_token_issued_to_another_client_is_refused(stack: Any) -> None:
    """The pool is this tenant's, but the token was issued to an app client it did not declare."""
    pool = _declared(stack)
    password = pool.user("ann")
    _accepted(stack, pool.sign_in("ann", password)["AccessToken"])
    other = pool.sign_in("ann", password, client_id=pool.other_client())
    _refused(stack, other["IdToken"])
    _refused(stack, other["AccessToken"])
    # A correctly signed ID token naming no client, or an access token passed off as an ID token.
    key = moto_pool_key()
    _refused(stack, forged({k: v for k, v in _claims(pool).items() if k != "aud"}, key))
    _refused(stack, forged(_claims(pool, token_use="access"), key))


def test_oidc_attack_an_undeclared_issuer_is_never_fetched(stack: Any) -> None:
    """A token names any `iss` it likes: one no tenant declared is refused before any fetch, so a
    token cannot make the authorizer dial an address (no SSRF by token)."""
    issuer = serve_issuer()
    try:
        _refused(stack, issuer.token("u-1", "console"))
        _refused(stack, forged({"iss": "http://169.254.169.254/latest", "sub": "x", "aud": "console",
                                "exp": int(time.time()) + 600}, issuer.key, alg="ES256"))
        assert issuer.asked == []
        # The control: once a tenant declares it, the same token is checked with its fetched keys.
        operator(stack).ok("PUT", "/v1/identity-provider", {"discovery_url": issuer.discovery_url,
                                                           "client_id": "console"})
        _accepted(stack, issuer.token("u-1", "console"))
        assert issuer.asked == ["/.well-known/openid-configuration", "/jwks.json"]
    finally:
        issuer.close()


def test_oidc_attack_a_huge_token_is_refused_unread(stack: Any) -> None:
    """Over 8,192 characters: refused before it is decoded, so nothing is looked up or fetched."""
    issuer = serve_issuer()
    try:
        operator(stack).ok("PUT", "/v1/identity-provider", {"discovery_url": issuer.discovery_url,
                                                           "client_id": "console"})
        _refused(stack, issuer.token("u-1", "console", padding="x" * 9000))
        assert issuer.asked == []
    finally:
        issuer.close()
