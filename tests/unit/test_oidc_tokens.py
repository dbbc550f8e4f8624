"""An identity provider's tokens at the edge (`http.credentials.authenticate`) and the rules that
read their claims (`core/identity.py`): which token is whose, what a person may do, and how the
keys are cached. The HTTP path, on the local stack with a moto user pool, is
tests/e2e/test_oidc_signin_e2e.py and tests/security/test_oidc_attacks.py."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.identity import IdentityProvider, audiences, cognito_issuer, signed_in
from holdpoint.http import edge
from holdpoint.http.bodies import IdentityProviderDeclaration
from holdpoint.http.credentials import authenticate, caller_of, context_of
from holdpoint.outbound import signing_keys
from holdpoint.outbound.signing_keys import KeysUnavailable, SigningKeys, parse_key_set
from holdpoint.services.caller import Caller
from holdpoint.services.sessions import agent_shown
from holdpoint_local.memory.store import MemoryStore
from holdpoint_local.provision import load_template

POOL = "eu-west-1_AbC123"
COGNITO = IdentityProvider("cognito", cognito_issuer(POOL), "console", "sub", "cognito:groups", POOL,
                           admit_groups=("finance",), admit_subjects=("u",))
ISSUER = "https://idp.example.com"
OIDC = IdentityProvider("oidc", ISSUER, "console", "sub", "groups", ISSUER + "/.well-known/openid-configuration",
                        admit_groups=("ops",), admit_subjects=("u",))
ADMIT = {"admit": {"groups": ["finance"], "subjects": ["u"]}}
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def _jwks(key: Any, kid: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
    return {"keys": [{**json.loads(algorithm.to_jwk(key.public_key())), "kid": kid}]}


class Served:
    """What the provider's URLs answer, and what was asked (the fetch `SigningKeys` is given)."""

    def __init__(self, docs: dict[str, Any]) -> None:
        self.docs, self.asked = docs, []  # type: list[str]

    def __call__(self, url: str) -> Any:
        self.asked.append(url)
        if url not in self.docs:
            raise KeysUnavailable(url)
        return self.docs[url]


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Served:
    monkeypatch.setenv("AWS_ENDPOINT_URL_COGNITO_IDP", "https://cognito.test")
    return Served({f"https://cognito.test/{POOL}/.well-known/jwks.json": _jwks(RSA_KEY, "r1"),
                   OIDC.source: {"issuer": ISSUER, "jwks_uri": ISSUER + "/keys"},
                   ISSUER + "/keys": _jwks(EC_KEY, "e1")})


@pytest.fixture
def store() -> MemoryStore:
    out = MemoryStore()
    out.declare_identity_provider("acme", COGNITO)
    out.declare_identity_provider("globex", OIDC)
    return out


def _cognito(use: str = "id", **changes: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {"iss": COGNITO.issuer, "sub": "u-1", "token_use": use, "iat": now, "exp": now + 60,
                              "cognito:groups": ["finance", 7, ""]}
    claims["aud" if use == "id" else "client_id"] = "console"
    return jwt.encode({**claims, **changes}, RSA_KEY, algorithm="RS256", headers={"kid": "r1"})


def _auth(token: str, store: MemoryStore, served: Served) -> Caller | None:
    return authenticate(f"Bearer {token}", store, lambda: None, SigningKeys(served))


def test_oidc_cognito_id_and_access_tokens_sign_in_an_approver_of_the_operator_origin(
        store: MemoryStore, served: Served) -> None:
    for use in ("id", "access"):
        caller = _auth(_cognito(use), store, served)
        assert caller == Caller("acme", "u-1", "operator", groups=("finance",), person=True)
        assert caller is not None and caller.expires is not None and caller.principal() == "key:u-1"
        assert caller_of(context_of(caller)) == caller  # carried through API Gateway's context


def test_oidc_any_issuer_by_discovery_es256(store: MemoryStore, served: Served) -> None:
    now = int(time.time())
    token = jwt.encode({"iss": ISSUER, "sub": "u-2", "aud": ["console", "api"], "exp": now + 60,
                        "groups": ["ops"]}, EC_KEY, algorithm="ES256", headers={"kid": "e1"})
    assert _auth(token, store, served) == Caller("globex", "u-2", "operator", groups=("ops",), person=True)
    assert served.asked == [OIDC.source, ISSUER + "/keys"]


def test_oidc_the_claims_rules() -> None:
    assert audiences({"aud": "a"}) == ("a",) and audiences({"aud": ["a", "b"]}) == ("a", "b")
    assert audiences({"client_id": "c"}) == ("c",)
    assert audiences({}) is None and audiences({"aud": ["a"] * 6}) is None and audiences({"aud": [1]}) is None
    base = {"sub": "u", "exp": 9, "token_use": "id", "aud": "console"}
    assert signed_in(base, COGNITO) is not None
    assert signed_in({**base, "token_use": "refresh"}, COGNITO) is None
    assert signed_in({k: v for k, v in base.items() if k != "token_use"}, COGNITO) is None
    assert signed_in({**base, "token_use": "access"}, COGNITO) is None  # an access token names `client_id`
    assert signed_in({**base, "sub": ""}, COGNITO) is None and signed_in({**base, "sub": 5}, COGNITO) is None
    assert signed_in({**base, "aud": "other"}, OIDC) is None
    assert signed_in({**base, "aud": ["x", "console"]}, OIDC) is not None


def test_oidc_an_email_subject_counts_only_when_the_provider_verified_it() -> None:
    """With `subject_claim: email`, a stranger who signs up giving an approver's address (Cognito
    keeps it unverified) is not that approver."""
    by_email = dataclasses.replace(OIDC, subject_claim="email", admit_subjects=("ann@acme.example",))
    base = {"email": "ann@acme.example", "exp": 9, "aud": "console"}
    assert signed_in(base, by_email) is None
    assert signed_in({**base, "email_verified": False}, by_email) is None
    assert signed_in({**base, "email_verified": "false"}, by_email) is None
    assert signed_in({**base, "email_verified": True}, by_email) is not None
    assert signed_in({**base, "email_verified": "true"}, by_email) is not None


def test_oidc_a_person_is_signed_in_only_when_admitted_by_subject_or_group() -> None:
    """The provider signs in anyone it has (a self sign-up, any account of a public issuer): only
    an admitted subject, or a member of an admitted group, is a person of the tenant."""
    base = {"sub": "stranger", "exp": 9, "token_use": "id", "aud": "console"}
    assert signed_in(base, COGNITO) is None  # signed in by the pool, in no admitted group
    assert signed_in({**base, "cognito:groups": ["staff", "marketing"]}, COGNITO) is None
    by_subject = signed_in({**base, "sub": "u"}, COGNITO)
    assert by_subject is not None and by_subject.subject == "u"
    by_group = signed_in({**base, "cognito:groups": ["staff", "finance"]}, COGNITO)
    assert by_group is not None and by_group.groups == ["staff", "finance"]
    # Only the declared claims count, and only a list of strings is groups.
    assert signed_in({**base, "groups": ["finance"], "username": "u"}, COGNITO) is None
    for shape in ("finance", '["finance"]', {"finance": True}, [["finance"]], None):
        assert signed_in({**base, "cognito:groups": shape}, COGNITO) is None, shape
    # Names match exactly: another case, or a prefix, is another group or person.
    assert signed_in({**base, "cognito:groups": ["Finance", "fin"]}, COGNITO) is None
    assert signed_in({**base, "sub": "U"}, COGNITO) is None


def test_oidc_a_provider_stored_without_admit_admits_no_one() -> None:
    """A record declared before admission existed reads as admitting no one, until declared again."""
    item = COGNITO.to_item()
    del item["admit"]
    old = IdentityProvider.from_item(item)
    assert (old.admit_groups, old.admit_subjects) == ((), ())
    assert old.wire()["admit"] == {"groups": [], "subjects": []}
    for claims in ({"sub": "u"}, {"sub": "u-1", "cognito:groups": ["finance"]}):
        assert signed_in({"exp": 9, "token_use": "id", "aud": "console", **claims}, old) is None


def test_oidc_a_stranger_of_the_declared_pool_is_refused_at_the_edge(store: MemoryStore, served: Served) -> None:
    """A token the declared pool signed, for the declared client, of someone it does not admit:
    refused as an unknown token is (None, the authorizer's no), whatever groups it carries."""
    assert _auth(_cognito(**{"sub": "stranger", "cognito:groups": ["staff"]}), store, served) is None
    assert _auth(_cognito("access", **{"sub": "stranger", "cognito:groups": []}), store, served) is None
    assert _auth(_cognito(sub="stranger"), store, served) is not None  # the control: in `finance`


def test_oidc_a_person_may_not_use_the_tenant_level_routes() -> None:
    ann = Caller("acme", "ann", "operator", person=True)
    for check in (ann.require_key, ann.require_machine):
        with pytest.raises(Refusal) as refused:
            check("declare agents")
        assert refused.value.code == "forbidden" and "identity provider" in refused.value.message


def _authorized_routes() -> set[str]:
    """The template's routes the authorizer guards, as API Gateway names them (`routeKey`)."""
    out = set()
    for resource in load_template()["Resources"].values():
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            props = event["Properties"] if event["Type"] == "HttpApi" else {}
            if props and (props.get("Auth") or {}).get("Authorizer") != "NONE":
                out.add(f"{props['Method']} {props['Path']}")
    return out


def _event(route: str | None, caller: Caller) -> dict[str, Any]:
    event: dict[str, Any] = {"requestContext": {"authorizer": {"lambda": context_of(caller)}}}
    if route is not None:
        event["routeKey"] = route
    return event


def test_oidc_a_person_may_only_read_follow_and_answer() -> None:
    """One list says what a person may do; every other route the authorizer guards, a route of
    the bridges, the agents, the keys, is refused to them (403 before any route runs), and not
    to an operator key."""
    ann, key = Caller("acme", "ann", "operator", person=True), Caller("acme", "ops", "operator")
    routes = _authorized_routes()
    assert routes > edge.PERSON_ROUTES
    for route in sorted(routes):
        assert edge.door_refusal(_event(route, key)) is None
        refused = edge.door_refusal(_event(route, ann))
        assert (refused is None) == (route in edge.PERSON_ROUTES), route
        if refused is not None:
            assert refused.code == "forbidden" and route in refused.message and "API key" in refused.message
            with pytest.raises(Refusal):
                edge.caller(_event(route, ann))
    assert {r for r in routes if r not in edge.PERSON_ROUTES} >= {
        "POST /v1/sessions", "POST /v1/sessions/{session_id}/inputs", "POST /v1/sessions/{session_id}/interrupts",
        "POST /v1/sessions/{session_id}/calls/settle", "POST /v1/channels/ag-ui/agents/{agent_id}/run",
        "POST /mcp/{agent_id}", "POST /a2a/{tenant}/{agent_id}", "POST /v1/runs/{run_id}/interrupts"}
    assert edge.caller(_event("GET /v1/interrupts", ann)) == ann
    refused = edge.door_refusal(_event(None, ann))  # an event naming no route: refused, not guessed
    assert refused is not None and refused.code == "forbidden"


def test_oidc_a_persons_session_view_shows_the_agents_tools_only() -> None:
    agent = AgentConfig.model_validate({"system": "secret prompt", "worker": {"url": "https://w.example/decide"},
                                        "tools": [{"name": "send", "description": "Send it",
                                                   "input": {"type": "object"}}]})
    assert agent_shown(Caller("acme", "ann", "operator", person=True), agent) == {
        "tools": [{"name": "send", "description": "Send it"}]}
    assert agent_shown(Caller("acme", "ops", "operator"), agent) == agent.to_item()


def test_oidc_unknown_key_ids_refetch_at_most_once_a_minute(served: Served) -> None:
    now = [1000.0]
    keys = SigningKeys(served, clock=lambda: now[0])
    assert keys.key(COGNITO, "r1") is not None and len(served.asked) == 1
    for _ in range(5):
        assert keys.key(COGNITO, "rotated") is None
    assert len(served.asked) == 1
    now[0] += signing_keys.REFETCH_SECONDS + 1
    assert keys.key(COGNITO, "rotated") is None and len(served.asked) == 2
    now[0] += signing_keys.KEEP_SECONDS + 1
    assert keys.key(COGNITO, "r1") is not None and len(served.asked) == 3


def test_oidc_a_provider_that_cannot_be_reached_is_tried_again_at_most_once_a_minute() -> None:
    """A failed fetch is remembered: the tokens that follow are refused without dialling the
    provider again, so a slow provider costs the authorizer one timeout a minute, not one a token."""
    now, served = [1000.0], Served({})
    keys = SigningKeys(served, clock=lambda: now[0])
    for _ in range(5):
        with pytest.raises(KeysUnavailable):
            keys.key(OIDC, "e1")
    assert served.asked == [OIDC.source]
    served.docs.update({OIDC.source: {"issuer": ISSUER, "jwks_uri": ISSUER + "/keys"},
                        ISSUER + "/keys": _jwks(EC_KEY, "e1")})
    now[0] += signing_keys.REFETCH_SECONDS + 1
    assert keys.key(OIDC, "e1") is not None and len(served.asked) == 3


def test_oidc_a_discovery_document_of_another_issuer_gives_no_keys(store: MemoryStore) -> None:
    served = Served({OIDC.source: {"issuer": "https://evil.example.com", "jwks_uri": ISSUER + "/keys"},
                     ISSUER + "/keys": _jwks(EC_KEY, "e1")})
    with pytest.raises(KeysUnavailable):
        SigningKeys(served).key(OIDC, "e1")
    assert served.asked == [OIDC.source]


def test_oidc_key_sets_keep_only_allowed_signing_keys() -> None:
    rsa_jwk = _jwks(RSA_KEY, "r1")["keys"][0]
    kept = parse_key_set({"keys": [rsa_jwk, {**rsa_jwk, "kid": "enc", "use": "enc"}, {"kty": "oct", "kid": "h",
                                                                                        "k": "c2VjcmV0"},
                                   {**rsa_jwk, "kid": 5}, "junk"]})
    assert list(kept) == ["r1"]
    with pytest.raises(KeysUnavailable):
        parse_key_set({"nokeys": []})


def test_oidc_declarations_become_providers() -> None:
    pool = IdentityProviderDeclaration.model_validate({"cognito": {"user_pool_id": POOL}, "client_id": "console",
                                                       **ADMIT})
    assert pool.provider() == COGNITO
    oidc = IdentityProviderDeclaration.model_validate({"discovery_url": OIDC.source, "client_id": "console",
                                                       "admit": {"groups": ["ops", "ops"], "subjects": ["u"]}})
    assert oidc.provider() == OIDC
    with pytest.raises(Refusal) as refused:
        IdentityProviderDeclaration.model_validate({"client_id": "console", **ADMIT}).provider()
    assert refused.value.param == "cognito"
    assert IdentityProvider.from_item(COGNITO.to_item()) == COGNITO
    domain = "https://acme.auth.eu-west-1.amazoncognito.com"
    hosted = IdentityProviderDeclaration.model_validate({"cognito": {"user_pool_id": POOL, "domain": domain + "/"},
                                                         "client_id": "console", **ADMIT}).provider()
    assert hosted.sign_in() == {"issuer": COGNITO.issuer, "client_id": "console",
                                "authorization_endpoint": domain + "/oauth2/authorize",
                                "token_endpoint": domain + "/oauth2/token"}
    assert hosted.wire()["cognito"] == {"user_pool_id": POOL, "domain": domain}
    assert IdentityProvider.from_item(hosted.to_item()) == hosted and COGNITO.sign_in() is None
