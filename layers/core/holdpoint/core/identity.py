"""A tenant's identity provider (`PUT /v1/identity-provider`, whose body is
`http.bodies.IdentityProviderDeclaration`): the OIDC issuer whose signed-in
people act as approvers of the operator origin, the groups and subjects it admits, and the
rules that read a token's claims once its signature checked out. Pure: the keys are fetched by
`holdpoint.outbound.signing_keys` and the signature checked at the edge (`holdpoint.http.credentials`).

One tenant per (issuer, client id): the issuer and the audience a token names find exactly one
tenant, or none, so a token never chooses its tenant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from holdpoint.core.jsontypes import JsonObject

ALGORITHMS = ("RS256", "ES256")
"""The signatures a provider's token may carry: asymmetric only, so no shared secret and no `none`."""

MAX_TOKEN_CHARS = 8192
"""The longest bearer credential read at all (an ID token with many groups stays well under it)."""

MAX_ISSUER_CHARS = 512
MAX_AUDIENCES = 5
"""A token naming more audiences is refused before any lookup."""

DISCOVERY_SUFFIX = "/.well-known/openid-configuration"
COGNITO_GROUPS = "cognito:groups"
COGNITO_POOL = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d)_[0-9A-Za-z]{1,55}$")
TOKEN_USES = ("id", "access")
"""Cognito's `token_use`: an ID token names its client in `aud`, an access token in `client_id`."""

MAX_ADMITTED = 50
MAX_ADMITTED_CHARS = 128
"""`admit.groups` and `admit.subjects` each hold at most 50 names of at most 128 characters."""

ProviderKind = Literal["cognito", "oidc"]
HOSTED_AUTHORIZE = "/oauth2/authorize"
HOSTED_TOKEN = "/oauth2/token"
"""A Cognito domain's hosted UI endpoints, under its `domain` URL."""


def cognito_issuer(pool_id: str) -> str:
    """The `iss` of a Cognito user pool's tokens: its region is the pool id's prefix."""
    return f"https://cognito-idp.{pool_id.split('_', 1)[0]}.amazonaws.com/{pool_id}"


@dataclass(frozen=True, slots=True)
class IdentityProvider:
    """A declared provider: `source` is the Cognito pool id (its keys are at the pool's JWKS) or
    the OIDC discovery URL (its document names the keys). Of the people it signs in, only those
    in `admit_groups` or named by `admit_subjects` are let in: a pool with self sign-up, or a
    public issuer, signs in strangers too. Empty by default: a record stored without `admit`
    admits no one until declared again."""

    kind: ProviderKind
    issuer: str
    client_id: str
    subject_claim: str
    groups_claim: str
    source: str
    authorization_endpoint: str | None = None  # where the console sends a person to sign in
    token_endpoint: str | None = None  # where the console exchanges the code for tokens
    admit_groups: tuple[str, ...] = ()
    admit_subjects: tuple[str, ...] = ()

    def admission(self) -> JsonObject:
        """`admit` as it is declared, stored and shown."""
        return {"groups": list(self.admit_groups), "subjects": list(self.admit_subjects)}

    def admits(self, subject: str, groups: object) -> bool:
        """Whether a signed-in person is let in: their subject is admitted, or one of their groups
        (the groups claim's strings; any other shape is no group) is."""
        if subject in self.admit_subjects:
            return True
        named = groups if isinstance(groups, list) else []
        return any(isinstance(g, str) and g in self.admit_groups for g in named)

    def to_item(self) -> JsonObject:
        out: JsonObject = {"kind": self.kind, "issuer": self.issuer, "client_id": self.client_id,
                           "subject_claim": self.subject_claim, "groups_claim": self.groups_claim,
                           "source": self.source, "admit": self.admission()}
        if self.authorization_endpoint and self.token_endpoint:
            out["authorization_endpoint"], out["token_endpoint"] = self.authorization_endpoint, self.token_endpoint
        return out

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> IdentityProvider:
        kind = item["kind"]
        if kind not in ("cognito", "oidc"):
            raise ValueError(f"not a provider kind: {kind!r}")
        admit = item.get("admit") or {}
        return cls(kind, str(item["issuer"]), str(item["client_id"]), str(item["subject_claim"]),
                   str(item["groups_claim"]), str(item["source"]), item.get("authorization_endpoint"),
                   item.get("token_endpoint"), _names(admit.get("groups")), _names(admit.get("subjects")))

    def wire(self) -> JsonObject:
        """The declaration as `GET /v1/identity-provider` shows it: what was declared, and the issuer."""
        out: JsonObject = {"issuer": self.issuer, "client_id": self.client_id,
                           "subject_claim": self.subject_claim, "groups_claim": self.groups_claim,
                           "admit": self.admission()}
        if self.kind == "cognito":
            pool: JsonObject = {"user_pool_id": self.source}
            if self.authorization_endpoint:
                pool["domain"] = self.authorization_endpoint.removesuffix(HOSTED_AUTHORIZE)
            out["cognito"] = pool
        else:
            out["discovery_url"] = self.source
            if self.authorization_endpoint and self.token_endpoint:
                out["authorization_endpoint"], out["token_endpoint"] = (self.authorization_endpoint,
                                                                        self.token_endpoint)
        return out

    def sign_in(self) -> JsonObject | None:
        """What the console needs to sign a person in (authorization code with PKCE, a public
        client: no secret), or None when the declaration names no endpoints."""
        if not (self.authorization_endpoint and self.token_endpoint):
            return None
        return {"issuer": self.issuer, "client_id": self.client_id,
                "authorization_endpoint": self.authorization_endpoint, "token_endpoint": self.token_endpoint}


def _names(raw: object) -> tuple[str, ...]:
    """A stored admission list: its strings; a record stored without one admits no one by it."""
    return tuple(n for n in raw if isinstance(n, str) and n) if isinstance(raw, list) else ()


def audiences(claims: dict[str, Any]) -> tuple[str, ...] | None:
    """The client ids a token names, unverified, for the lookup: `aud` (a string or a list), or a
    Cognito access token's `client_id`; None when it names none or too many."""
    aud = claims.get("aud")
    named = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if not named and isinstance(claims.get("client_id"), str):
        named = [claims["client_id"]]
    if not named or len(named) > MAX_AUDIENCES or not all(isinstance(a, str) and a for a in named):
        return None
    return tuple(named)


@dataclass(frozen=True, slots=True)
class SignedIn:
    """Who a verified token names, and until when; its groups are the raw `groups_claim`, read
    as every credential's groups are (`http.credentials.groups_of`)."""

    subject: str
    groups: object
    expires: int


def signed_in(claims: dict[str, Any], provider: IdentityProvider) -> SignedIn | None:
    """The person a token whose signature, `iss` and `exp` checked out names, or None: the token
    must be issued to the declared client (`aud`, or a Cognito access token's `client_id`), a
    Cognito token must say what it is (`token_use`), the subject claim must be a string (an
    `email` one verified, `email_verified`), and the
    provider must admit the person (`IdentityProvider.admits`): a token it issues to anyone who
    signed up is no approver's."""
    if provider.kind == "cognito":
        use = claims.get("token_use")
        if use not in TOKEN_USES:
            return None
        issued_to = claims.get("client_id") if use == "access" else claims.get("aud")
        if issued_to != provider.client_id:
            return None
    elif provider.client_id not in (audiences(claims) or ()):
        return None
    subject, exp = claims.get(provider.subject_claim), claims.get("exp")
    if not isinstance(subject, str) or not subject or len(subject) > 256:
        return None
    if provider.subject_claim == "email" and claims.get("email_verified") not in (True, "true"):
        return None  # an address a person typed at sign-up, unproven, names no approver
    if isinstance(exp, bool) or not isinstance(exp, int):
        return None
    groups = claims.get(provider.groups_claim)
    if not provider.admits(subject, groups):
        return None
    return SignedIn(subject, groups, exp)
