"""Fix 36 (local/holdpoint_local/moto/cognito.py): a user pool's hosted UI on the moto server, the
OAuth 2.0 authorization code flow with PKCE (S256) a browser goes through, driven here over HTTP
as a browser would. Stock moto answers `/{pool}/oauth2/authorize` and `/oauth2/token` with a 500, so
these tests fail on it. The tokens it gives are the pool's own, and the stack's authorizer takes them."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import jwt
import requests

from tests.oidc import Pool, operator, person, pool_on

CALLBACK = "http://127.0.0.1:9/inbox"


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _authorize(endpoint: str, pool: Pool, challenge: str, **extra: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": pool.client_id, "redirect_uri": CALLBACK, "state": "s-1",
            "code_challenge": challenge, "code_challenge_method": "S256", "scope": "openid", **extra}


def signed_in_with_pkce(endpoint: str, pool: Pool, name: str, password: str) -> dict[str, Any]:
    """The browser's part: the sign-in form, the redirect back with a code, the code for tokens."""
    verifier, challenge = _pkce()
    url = f"{endpoint}/{pool.pool_id}/oauth2/authorize"
    params = _authorize(endpoint, pool, challenge)
    form = requests.get(url, params=params, timeout=30)
    assert form.status_code == 200 and 'id="password"' in form.text, form.text[:300]
    back = requests.post(url, data={**params, "username": name, "password": password}, allow_redirects=False,
                         timeout=30)
    assert back.status_code == 302, back.text[:300]
    location = urlsplit(back.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == CALLBACK
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["state"] == "s-1"
    tokens = requests.post(f"{endpoint}/{pool.pool_id}/oauth2/token", timeout=30, data={
        "grant_type": "authorization_code", "code": query["code"], "client_id": pool.client_id,
        "redirect_uri": CALLBACK, "code_verifier": verifier})
    assert tokens.status_code == 200 and tokens.headers["Access-Control-Allow-Origin"] == "*", tokens.text
    out: dict[str, Any] = tokens.json()
    out["code"] = query["code"]
    out["verifier"] = verifier
    return out


def _pool(endpoint: str) -> Pool:
    return pool_on(boto3.client("cognito-idp", endpoint_url=endpoint, region_name="us-east-1"), "hosted", CALLBACK)


def test_oidc_moto_hosted_ui_code_flow_with_pkce(moto_server: Any) -> None:
    endpoint = moto_server.endpoint
    pool = _pool(endpoint)
    tokens = signed_in_with_pkce(endpoint, pool, "ann", pool.user("ann", ("finance",), admitted=False))
    keys = jwt.PyJWKClient(f"{endpoint}/{pool.pool_id}/.well-known/jwks.json")
    claims = jwt.decode(tokens["id_token"], keys.get_signing_key_from_jwt(tokens["id_token"]).key,
                        algorithms=["RS256"], audience=pool.client_id, issuer=pool.issuer)
    assert claims["cognito:username"] == "ann" and claims["cognito:groups"] == ["finance"]
    assert tokens["token_type"] == "Bearer" and tokens["access_token"]
    # A code is spent once.
    again = requests.post(f"{endpoint}/{pool.pool_id}/oauth2/token", timeout=30, data={
        "grant_type": "authorization_code", "code": tokens["code"], "client_id": pool.client_id,
        "redirect_uri": CALLBACK, "code_verifier": tokens["verifier"]})
    assert again.status_code == 400 and again.json() == {"error": "invalid_grant"}


def test_oidc_moto_hosted_ui_refuses_what_cognito_refuses(moto_server: Any) -> None:
    endpoint = moto_server.endpoint
    pool = _pool(endpoint)
    password = pool.user("bob")
    url = f"{endpoint}/{pool.pool_id}/oauth2/authorize"
    verifier, challenge = _pkce()
    for bad in ({"redirect_uri": "https://evil.example.com/"}, {"code_challenge_method": "plain"},
                {"response_type": "token"}, {"client_id": "nobody"}):
        page = requests.get(url, params=_authorize(endpoint, pool, challenge, **bad), timeout=30)
        assert page.status_code == 400 and "Location" not in page.headers, bad
    params = _authorize(endpoint, pool, challenge)
    wrong = requests.post(url, data={**params, "username": "bob", "password": "nope"}, allow_redirects=False,
                          timeout=30)
    assert wrong.status_code == 200 and 'id="error"' in wrong.text
    back = requests.post(url, data={**params, "username": "bob", "password": password}, allow_redirects=False,
                         timeout=30)
    code = parse_qs(urlsplit(back.headers["Location"]).query)["code"][0]
    stolen = requests.post(f"{endpoint}/{pool.pool_id}/oauth2/token", timeout=30, data={
        "grant_type": "authorization_code", "code": code, "client_id": pool.client_id, "redirect_uri": CALLBACK,
        "code_verifier": _pkce()[0]})  # a code without its verifier is worth nothing
    assert stolen.status_code == 400 and stolen.json() == {"error": "invalid_grant"}


def test_oidc_pkce_tokens_sign_in_to_the_api(stack: Any) -> None:
    pool = pool_on(stack.client("cognito-idp"), "console", CALLBACK)
    operator(stack).ok("PUT", "/v1/identity-provider", pool.declaration())
    tokens = signed_in_with_pkce(stack.moto_endpoint, pool, "cid", pool.user("cid"))
    assert person(stack, tokens["id_token"]).ok("GET", "/v1/interrupts?status=open")["interrupts"] == []
    assert person(stack, tokens["access_token"]).ok("GET", "/v1/interrupts?status=open")["interrupts"] == []
