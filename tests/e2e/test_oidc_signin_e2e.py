"""Sign-in with the tenant's identity provider, over HTTP on the local stack: a Cognito user pool
on moto, real users signed in (AdminCreateUser, InitiateAuth), their ID and access tokens checked
by the real authorizer against the pool's JWKS, and their pool groups matched against the
approver policy's `groups` (A2). Any other OIDC issuer is declared by its discovery URL."""

from __future__ import annotations

from typing import Any

import requests

from tests.oidc import ADMITTED, make_pool, operator, person, serve_issuer
from tests.security.probes import refusal, table_count
from tests.stack import Api, declare_agent, resumed_triggers
from tests.waiting import wait_for


def test_oidc_cognito_people_answer_as_approvers_by_their_pool_groups(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    pool, ops = make_pool(stack), operator(stack)
    declared = ops.ok("PUT", "/v1/identity-provider", pool.declaration())
    assert declared == {"issuer": pool.issuer, "client_id": pool.client_id, "subject_claim": "sub",
                        "groups_claim": "cognito:groups", "admit": {"groups": [ADMITTED], "subjects": []},
                        "cognito": {"user_pool_id": pool.pool_id}}
    assert ops.ok("GET", "/v1/identity-provider") == declared
    declare_agent(api, worker[0], approval={"groups": ["finance"]})
    fiona = pool.sign_in("fiona", pool.user("fiona", ("finance",)))
    gus = pool.sign_in("gus", pool.user("gus"))
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    # Gus is signed in but in no group the policy names: refused, nothing recorded.
    before = table_count(stack)
    refusal(person(stack, gus["IdToken"]).resume(sid, iid, {"approved": True}), 403, code="not_an_approver")
    assert table_count(stack) == before
    # Fiona's access token reads the inbox; her ID token answers, and the answer reaches the worker.
    inbox = person(stack, fiona["AccessToken"]).ok("GET", "/v1/interrupts?status=open")
    assert [i["interrupt_id"] for i in inbox["interrupts"]] == [iid]
    answered = person(stack, fiona["IdToken"]).resume(sid, iid, {"approved": True})
    assert answered.status_code == 200 and answered.json()["noop"] is False, answered.text
    api.wait_status(sid, "done")
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["payload"] == {"approved": True}
    # The answer is recorded as Fiona's: her `sub`, of the operator origin.
    attributes = pool.cognito.admin_get_user(UserPoolId=pool.pool_id, Username="fiona")["UserAttributes"]
    sub = next(a["Value"] for a in attributes if a["Name"] == "sub")
    again = api.resume(sid, iid, {"approved": True}).json()
    assert again["noop"] is True and again["resolved"]["by"] == {"subject": sub, "origin": "operator"}


def test_oidc_a_person_is_an_approver_not_a_key(api: Api, stack: Any) -> None:
    """A signed-in person answers and reads; the tenant-level routes stay the API keys'."""
    pool = make_pool(stack)
    operator(stack).ok("PUT", "/v1/identity-provider", pool.declaration())
    ann = person(stack, pool.sign_in("ann", pool.user("ann", ("ops",)))["IdToken"])
    before = table_count(stack)
    refusal(ann.req("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": []}}), 403,
            code="forbidden")
    refusal(ann.req("POST", "/v1/client-tokens", {"identity": {"id": "ann"}}), 403, code="forbidden")
    refusal(ann.req("PUT", "/v1/identity-provider", pool.declaration()), 403, code="forbidden")
    refusal(ann.req("GET", "/v1/identity-provider"), 403, code="forbidden")
    assert table_count(stack) == before
    assert ann.ok("GET", "/v1/interrupts?status=open")["interrupts"] == []


def test_oidc_any_issuer_by_its_discovery_url(api: Api, stack: Any) -> None:
    """A non-Cognito issuer: its discovery document names its JWKS (ES256 here); the groups claim
    is the declared one, and admits by group (u-42) or by subject (u-43, in no group)."""
    issuer = serve_issuer()
    try:
        operator(stack).ok("PUT", "/v1/identity-provider", {
            "discovery_url": issuer.discovery_url, "client_id": "console", "groups_claim": "roles",
            "admit": {"groups": ["ops"], "subjects": ["u-43"]}})
        token = issuer.token("u-42", "console", roles=["ops"])
        assert person(stack, token).ok("GET", "/v1/interrupts?status=open")["interrupts"] == []
        wait_for(lambda: "/jwks.json" in issuer.asked, "the issuer's keys fetched")
        assert issuer.asked.count("/jwks.json") == 1
        # Another token of the same issuer is checked with the cached keys: nothing fetched again.
        person(stack, issuer.token("u-43", "console")).ok("GET", "/v1/interrupts?status=open")
        assert issuer.asked.count("/jwks.json") == 1
    finally:
        issuer.close()


def test_oidc_declaration_refusals_name_the_field(api: Api, stack: Any, other_tenant: Api) -> None:
    """Only an operator key declares the provider (its people answer as operators); a bad
    declaration is a 400 naming its field, and records nothing."""
    pool, ops = make_pool(stack), operator(stack)
    refusal(api.req("PUT", "/v1/identity-provider", pool.declaration()), 403, code="forbidden")
    before = table_count(stack)
    admit = {"admit": {"groups": [ADMITTED]}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"client_id": "c", **admit}, "cognito"),
        ({**pool.declaration(), "discovery_url": "https://idp.example.com/.well-known/openid-configuration"},
         "cognito"),
        ({"cognito": {"user_pool_id": "not a pool"}, "client_id": "c", **admit}, "cognito.user_pool_id"),
        ({"discovery_url": "https://idp.example.com/", "client_id": "c", **admit}, "discovery_url"),
        ({"discovery_url": "http://169.254.169.254/.well-known/openid-configuration", "client_id": "c", **admit},
         "discovery_url"),
        ({"cognito": {"user_pool_id": pool.pool_id}, **admit}, "client_id"),
        ({"cognito": {"user_pool_id": pool.pool_id}, "client_id": pool.client_id}, "admit"),
        (pool.declaration(admit={"groups": [], "subjects": []}), "admit"),
        ({**pool.declaration(), "groups_claim": "has space"}, "groups_claim"),
        ({**pool.declaration(), "extra": 1}, "extra"),
        ({**pool.declaration(), "cognito": {"user_pool_id": pool.pool_id, "domain": "ftp://auth.example.com"}},
         "cognito.domain"),
        ({**pool.declaration(), "authorization_endpoint": "https://idp.example.com/authorize",
          "token_endpoint": "https://idp.example.com/token"}, "authorization_endpoint"),
        ({"discovery_url": "https://idp.example.com/.well-known/openid-configuration", "client_id": "c", **admit,
          "authorization_endpoint": "https://idp.example.com/authorize"}, "token_endpoint"),
        ({"discovery_url": "http://127.0.0.1:9/.well-known/openid-configuration", "client_id": "c", **admit,
          "authorization_endpoint": "http://127.0.0.1:9/authorize",
          "token_endpoint": "http://169.254.169.254/token"}, "token_endpoint"),
    ]
    for body, param in cases:
        refusal(ops.req("PUT", "/v1/identity-provider", body), 400, code="validation_error", param=param)
    assert table_count(stack) == before
    refusal(ops.req("GET", "/v1/identity-provider"), 404, code="not_found")
    # One tenant per (issuer, client id): another tenant cannot take a pair this one declared.
    ops.ok("PUT", "/v1/identity-provider", pool.declaration())
    refusal(other_tenant.req("PUT", "/v1/identity-provider", pool.declaration()), 409, code="conflict",
            param="client_id")
    refusal(other_tenant.req("GET", "/v1/identity-provider"), 404)


def test_oidc_the_console_learns_the_tenants_sign_in(api: Api, stack: Any) -> None:
    """`/inbox/sign-in.json?tenant=T` (no credentials) names what the console's PKCE flow needs, and
    `/inbox?tenant=T`'s CSP lets the page reach the token endpoint and nothing else new."""
    pool = make_pool(stack)
    domain = f"{stack.moto_endpoint}/{pool.pool_id}"  # the local hosted UI (moto fix 36)
    declared = operator(stack).ok("PUT", "/v1/identity-provider",
                                  {**pool.declaration(), "cognito": {"user_pool_id": pool.pool_id, "domain": domain}})
    assert declared["cognito"] == {"user_pool_id": pool.pool_id, "domain": domain}
    config = requests.get(f"{stack.base_url}/inbox/sign-in.json", params={"tenant": stack.tenant}, timeout=30)
    assert config.json() == {"issuer": pool.issuer, "client_id": pool.client_id,
                             "authorization_endpoint": f"{domain}/oauth2/authorize",
                             "token_endpoint": f"{domain}/oauth2/token"}
    csp = requests.get(f"{stack.base_url}/inbox", params={"tenant": stack.tenant}, timeout=30).headers[
        "Content-Security-Policy"]
    assert f"connect-src 'self' {stack.moto_endpoint};" in csp and "form-action 'none'" in csp
    assert "connect-src 'self';" in requests.get(f"{stack.base_url}/inbox", timeout=30).headers[
        "Content-Security-Policy"]
    for tenant in ("other", "no such tenant", ""):
        assert requests.get(f"{stack.base_url}/inbox/sign-in.json", params={"tenant": tenant},
                            timeout=30).status_code == 404
