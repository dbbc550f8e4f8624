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
    ADMITTED,
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
            "iat": now, "exp": now + 600, "cognito:groups": ["finance", ADMITTED], **changes}


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


def test_oidc_attack_a_self_signed_up_stranger_of_the_declared_pool_is_refused(
        api: Api, stack: Any) -> None:
    """Stan signs up to the declared pool himself (SignUp needs only the public client id), confirms
    his own address and signs in: his ID and access tokens are the pool's own, for the declared
    client, but he is in no admitted group and no admitted subject. The interrupt's policy names no
    approvers, so any person let in could answer it: he is refused as an unknown token is, and
    nothing is recorded."""
    pool = _declared(stack)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    stan = pool.sign_in("stan", pool.signed_up("stan"))
    before = table_count(stack)
    for token in (stan["IdToken"], stan["AccessToken"]):
        _refused(stack, token)
        answer = person(stack, token).resume(sid, interrupt["interrupt_id"], {"approved": True})
        assert answer.status_code == 403 and answer.json() == {"message": "Forbidden"}, answer.text[:300]
    # A member of the pool's other groups is no better: only the admitted group lets a person in.
    staff = pool.sign_in("sam", pool.user("sam", ("staff",), admitted=False))["IdToken"]
    _refused(stack, staff)
    assert table_count(stack) == before
    assert api.view(sid)["status"] == "interrupted"
    # The control: the same pool's admitted member is let in with the same kind of token.
    _accepted(stack, pool.sign_in("fiona", pool.user("fiona"))["IdToken"])


def test_oidc_attack_any_account_of_a_public_issuer_is_refused_unless_admitted(stack: Any) -> None:
    """An issuer that signs in anyone (Google, say) admits only the declared subjects and groups."""
    issuer = serve_issuer()
    try:
        operator(stack).ok("PUT", "/v1/identity-provider", {"discovery_url": issuer.discovery_url,
                                                           "client_id": "console",
                                                           "admit": {"subjects": ["ann"], "groups": ["ops"]}})
        _refused(stack, issuer.token("anyone", "console"))
        _refused(stack, issuer.token("anyone", "console", groups=["staff", "Ops"]))
        _accepted(stack, issuer.token("ann", "console"))
        _accepted(stack, issuer.token("bob", "console", groups=["ops"]))
    finally:
        issuer.close()


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
                                                           "client_id": "console", "admit": {"subjects": ["u-1"]}})
        _accepted(stack, issuer.token("u-1", "console"))
        assert issuer.asked == ["/.well-known/openid-configuration", "/jwks.json"]
    finally:
        issuer.close()


def test_oidc_attack_a_huge_token_is_refused_unread(stack: Any) -> None:
    """Over 8,192 characters: refused before it is decoded, so nothing is looked up or fetched."""
    issuer = serve_issuer()
    try:
        operator(stack).ok("PUT", "/v1/identity-provider", {"discovery_url": issuer.discovery_url,
                                                           "client_id": "console", "admit": {"subjects": ["u-1"]}})
        _refused(stack, issuer.token("u-1", "console", padding="x" * 9000))
        assert issuer.asked == []
    finally:
        issuer.close()


def _signed_in_approver(stack: Any, api: Api, worker: tuple[str, list[dict[str, Any]]]) -> Api:
    """Fiona, signed in through the declared pool, in the group the agent's policy names."""
    declare_agent(api, worker[0], approval={"groups": ["finance"]})
    pool = _declared(stack)
    return person(stack, pool.sign_in("fiona", pool.user("fiona", ("finance",)))["IdToken"])


def _refused_to_person(resp: requests.Response, route: str) -> None:
    err = refusal(resp, 403, code="forbidden")
    assert route in err["message"] and "use an API key" in err["message"], err


def test_oidc_attack_a_person_cannot_start_send_raise_settle_or_use_the_bridges(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """A person may read, follow and answer interrupts, nothing else: starting a session, sending
    an input (an answer sent as one too), raising an interrupt, settling a call, the AG-UI run,
    MCP, A2A, the runs bridge and a worker's submit are each 403 naming the route, before any
    body is read (a malformed one too), and nothing is recorded."""
    fiona = _signed_in_approver(stack, api, worker)
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    message, inputs = {"role": "user", "content": "Email Eve"}, "POST /v1/sessions/{session_id}/inputs"
    attacks: list[tuple[str, str, Any, str]] = [
        ("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant", "message": message},
         "POST /v1/sessions"),
        ("POST", "/v1/sessions", {"not": "an input"}, "POST /v1/sessions"),
        ("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.message", "message": message}, inputs),
        ("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": iid,
                                                 "payload": {"approved": True}}, inputs),
        ("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "approve", "payload": {"message": "Wire $1M?"}},
         "POST /v1/sessions/{session_id}/interrupts"),
        ("POST", f"/v1/sessions/{sid}/calls/settle", {"type": "tool.result", "id": "c-1", "result": "sent"},
         "POST /v1/sessions/{session_id}/calls/settle"),
        ("POST", "/v1/channels/ag-ui/agents/assistant/run",
         {"threadId": "t-fiona", "runId": "r-1", "messages": [{"id": "u-1", "role": "user", "content": "hi"}]},
         "POST /v1/channels/ag-ui/agents/{agent_id}/run"),
        ("POST", "/v1/channels/ag-ui/agents/assistant/connect", {"threadId": sid, "runId": "r-2", "messages": []},
         "POST /v1/channels/ag-ui/agents/{agent_id}/connect"),
        ("POST", "/mcp/assistant", {"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {
            "name": "request_approval", "arguments": {"question": "Rotate the key?"}}}, "POST /mcp/{agent_id}"),
        ("POST", f"/a2a/{stack.tenant}/assistant", {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}},
         "POST /a2a/{tenant}/{agent_id}"),
        ("POST", "/v1/runs/run-fiona/interrupts", {"agent_id": "assistant", "interrupts": [
            {"reason": "approve", "payload": {"message": "Go?"}}]}, "POST /v1/runs/{run_id}/interrupts"),
        ("GET", "/v1/runs/run-fiona", None, "GET /v1/runs/{run_id}"),
        ("POST", "/v1/workers/submit", {"session_id": sid, "decision_id": "d-1", "actions": []},
         "POST /v1/workers/submit"),
    ]
    sessions = len(api.ok("GET", "/v1/sessions?limit=100")["sessions"])
    before = table_count(stack)
    for method, path, body, route in attacks:
        _refused_to_person(fiona.req(method, path, body), route)
    assert table_count(stack) == before
    assert len(api.ok("GET", "/v1/sessions?limit=100")["sessions"]) == sessions
    assert api.view(sid)["status"] == "interrupted"


def test_oidc_a_person_reads_follows_and_answers_one_and_many(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """The control beside the refusals: a person reads the inbox, the sessions, a session, its
    events and trace, and answers an interrupt on its own and in a bulk answer."""
    fiona = _signed_in_approver(stack, api, worker)
    first, second = api.start(), api.start("Email Carol")
    opened = {sid: api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"] for sid in (first, second)}
    inbox = fiona.ok("GET", INBOX)["interrupts"]
    assert {(i["session_id"], i["interrupt_id"]) for i in inbox} == set(opened.items())
    assert {s["session_id"] for s in fiona.ok("GET", "/v1/sessions")["sessions"]} >= {first, second}
    assert fiona.view(first)["interrupts"][0]["interrupt_id"] == opened[first]
    assert fiona.events(first)
    assert fiona.req("GET", f"/v1/sessions/{first}/events/stream").status_code == 200
    assert fiona.req("GET", f"/v1/sessions/{first}/trace").status_code == 200
    one = fiona.resume(first, opened[first], {"approved": True})
    assert one.status_code == 200 and one.json()["noop"] is False, one.text
    many = fiona.ok("POST", "/v1/interrupts/resume", {"items": [
        {"session_id": second, "interrupt_id": opened[second], "payload": {"approved": True}}]})
    assert many["counts"] == {"answered": 1, "noop": 0, "refused": 0}, many
    api.wait_status(first, "done")
    api.wait_status(second, "done")


def test_oidc_attack_a_persons_session_view_hides_the_agent_config(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """`GET /v1/agents` is refused to a person; the session view shows them no more of the agent
    than an end user sees (its tools' names and descriptions): not the worker's address, the
    system prompt or the approver policy."""
    fiona = _signed_in_approver(stack, api, worker)
    sid = api.start()
    api.wait_status(sid, "interrupted")
    assert api.view(sid)["agent"]["worker"]["url"] == worker[0]  # the control: an API key sees it whole
    assert fiona.view(sid)["agent"] == {"tools": [{"name": "send_email"}]}
    refusal(fiona.req("GET", "/v1/agents/assistant"), 403, code="forbidden")
