"""Identity providers for the tests: a Cognito user pool on the stack's moto, its users signed in
for real (AdminCreateUser, then InitiateAuth), and a small OIDC issuer of the test's own (a
discovery document and a JWKS served over HTTP, ES256) that counts what it was asked for."""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from moto.utilities.utils import load_resource

from holdpoint.aws.keys import put_api_key
from tests.answering import send_json
from tests.stack import Api

ADMITTED = "holdpoint"
"""The pool group the tests' declarations admit, and their users are in unless told otherwise."""


@dataclass
class Pool:
    """A user pool with one app client (no secret, as a browser's), and the way to sign users in."""

    cognito: Any
    pool_id: str
    client_id: str

    @property
    def issuer(self) -> str:
        return f"https://cognito-idp.{self.pool_id.split('_', 1)[0]}.amazonaws.com/{self.pool_id}"

    def declaration(self, **extra: Any) -> dict[str, Any]:
        """The pool declared with its `holdpoint` group admitted."""
        return {"cognito": {"user_pool_id": self.pool_id}, "client_id": self.client_id,
                "admit": {"groups": [ADMITTED]}, **extra}

    def user(self, name: str, groups: tuple[str, ...] = (), *, admitted: bool = True) -> str:
        """A confirmed user in `groups`, and in the admitted group unless `admitted` is False;
        returns its password."""
        password = "Pw-" + secrets.token_urlsafe(12) + "9!a"
        self.cognito.admin_create_user(UserPoolId=self.pool_id, Username=name, MessageAction="SUPPRESS")
        self.cognito.admin_set_user_password(UserPoolId=self.pool_id, Username=name, Password=password,
                                             Permanent=True)
        self._join(name, (*groups, ADMITTED) if admitted else groups)
        return password

    def signed_up(self, name: str) -> str:
        """A stranger who signed up through the app client (SignUp, public: the client id is all
        it takes) and confirmed their own address; returns the password."""
        password = "Pw-" + secrets.token_urlsafe(12) + "9!a"
        self.cognito.sign_up(ClientId=self.client_id, Username=name, Password=password)
        self.cognito.admin_confirm_sign_up(UserPoolId=self.pool_id, Username=name)  # the emailed code, entered
        return password

    def _join(self, name: str, groups: tuple[str, ...]) -> None:
        for group in groups:
            with contextlib.suppress(self.cognito.exceptions.GroupExistsException):
                self.cognito.create_group(UserPoolId=self.pool_id, GroupName=group)
            self.cognito.admin_add_user_to_group(UserPoolId=self.pool_id, Username=name, GroupName=group)

    def sign_in(self, name: str, password: str, client_id: str | None = None) -> dict[str, str]:
        """InitiateAuth USER_PASSWORD_AUTH: the pool's `IdToken` and `AccessToken`."""
        out = self.cognito.initiate_auth(ClientId=client_id or self.client_id, AuthFlow="USER_PASSWORD_AUTH",
                                         AuthParameters={"USERNAME": name, "PASSWORD": password})
        result: dict[str, str] = out["AuthenticationResult"]
        return result

    def other_client(self) -> str:
        """A second app client of the same pool: its tokens name another audience."""
        return str(self.cognito.create_user_pool_client(UserPoolId=self.pool_id, ClientName="other",
                                                        ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH",
                                                                           "ALLOW_REFRESH_TOKEN_AUTH"])
                   ["UserPoolClient"]["ClientId"])


def make_pool(stack: Any, name: str = "approvers", callback: str = "http://127.0.0.1/inbox") -> Pool:
    """A pool and its console's app client: the password flow, and the hosted UI's code flow back
    to `callback`."""
    return pool_on(stack.client("cognito-idp"), name, callback)


def pool_on(cognito: Any, name: str, callback: str) -> Pool:
    pool_id = cognito.create_user_pool(PoolName=name)["UserPool"]["Id"]
    client_id = cognito.create_user_pool_client(
        UserPoolId=pool_id, ClientName="console", GenerateSecret=False,
        ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"], CallbackURLs=[callback],
        AllowedOAuthFlows=["code"], AllowedOAuthScopes=["openid"], AllowedOAuthFlowsUserPoolClient=True,
        SupportedIdentityProviders=["COGNITO"])["UserPoolClient"]["ClientId"]
    return Pool(cognito, pool_id, client_id)


def operator(stack: Any, tenant: str | None = None) -> Api:
    """An operator key of the tenant (the stack's own by default): only operators declare the provider."""
    tenant = tenant or stack.tenant
    key = f"hp_oidc_operator_{tenant}"
    put_api_key(stack.env["TABLE_NAME"], key, tenant, "ops", "operator")
    return Api(stack.base_url, key)


def person(stack: Any, token: str) -> Api:
    """A client of the stack calling with an identity provider's token."""
    return Api(stack.base_url, token)


def moto_pool_key() -> Any:
    """The private key moto signs every pool's tokens with (a resource of the pinned moto): the
    way to mint a correctly signed token with claims moto would never give (an expired one)."""
    doc = load_resource("cognitoidp/resources/jwks-private.json")  # kept gzipped in the wheel
    return jwt.PyJWK(doc).key


def forged(claims: dict[str, Any], key: Any, *, alg: str = "RS256", kid: str = "dummy") -> str:
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


def foreign_rsa_key() -> Any:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def with_claims(token: str, **changes: Any) -> str:
    """The token with its payload edited and its signature kept (so it no longer matches)."""
    head, body, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims.update(changes)
    edited = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{edited}.{sig}"


def unsigned(claims: dict[str, Any]) -> str:
    """`alg: none`: a header and a payload, and an empty signature."""
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': 'dummy'})}.{part(claims)}."


@dataclass
class Issuer:
    """An OIDC issuer of the test's own on 127.0.0.1: `/.well-known/openid-configuration` and
    `/jwks.json` (one ES256 key), and the paths it was asked for."""

    server: ThreadingHTTPServer
    key: Any = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    kid: str = "k1"
    asked: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def discovery_url(self) -> str:
        return self.url + "/.well-known/openid-configuration"

    def token(self, sub: str, aud: str, *, groups: list[str] | None = None, ttl: int = 600,
              **extra: Any) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "sub": sub, "aud": aud, "iat": now, "exp": now + ttl, **extra}
        if groups is not None:
            claims["groups"] = groups
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": self.kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_issuer() -> Issuer:
    issuer: Issuer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            issuer.asked.append(self.path)
            if self.path == "/.well-known/openid-configuration":
                body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks.json"}
            elif self.path == "/jwks.json":
                public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(issuer.key.public_key()))
                body = {"keys": [{**public, "kid": issuer.kid, "use": "sig", "alg": "ES256"}]}
            else:
                self.send_error(404)
                return
            send_json(self, body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer = Issuer(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return issuer
