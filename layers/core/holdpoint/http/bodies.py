"""Bodies only the HTTP API reads or writes: `POST /v1/sessions`' inputs (which name their agent),
a resume, a client-token request, an identity provider's declaration, and the two error bodies
(Holdpoint's `{"error": ...}` and API Gateway's own `{"message": ...}`).
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, field_validator

from holdpoint.core.errors import Refusal
from holdpoint.core.identity import (
    COGNITO_GROUPS,
    COGNITO_POOL,
    DISCOVERY_SUFFIX,
    HOSTED_AUTHORIZE,
    HOSTED_TOKEN,
    MAX_ADMITTED,
    MAX_ADMITTED_CHARS,
    MAX_ISSUER_CHARS,
    IdentityProvider,
    cognito_issuer,
)
from holdpoint.core.protocols import Comment, Id, JsonDict, Wire, integral
from holdpoint.core.protocols.client import ClientActionInput, ClientMessageInput, ClientMessagesInput
from holdpoint.services.bulk import MAX_ITEMS as MAX_BULK_ITEMS


class NewSessionMessageInput(ClientMessageInput):
    """A session is started for an agent, so `POST /v1/sessions` needs `agent_id`."""

    agent_id: Id


class NewSessionMessagesInput(ClientMessagesInput):
    """`client.messages` that starts a session (names its agent)."""

    agent_id: Id


class NewSessionActionInput(ClientActionInput):
    """`client.action` that starts a session (names its agent)."""

    agent_id: Id


NewSessionInput = Annotated[
    NewSessionMessageInput | NewSessionMessagesInput | NewSessionActionInput,
    Field(discriminator="type"),
]
"""What `POST /v1/sessions` accepts; the other inputs need an existing session."""


class ResumeBody(Wire):
    payload: Any = None
    expect_fingerprint: str | None = Field(
        default=None, description="A3: resume only if the interrupt's `action.fingerprint` is this "
        "(else 409 `stale_approval`, nothing recorded)")
    comment: Comment | None = Field(default=None, description="recorded with the answer (at most 2,000 characters)")
    arguments: JsonDict | None = Field(
        default=None, description="A3: the approver's edit of the action's arguments, given with an approval "
        "where the policy allows `edit`: checked against the tool's `input` schema; the approval then binds the "
        "edited action (a new fingerprint) and a quorum's count restarts; an approver whose answer stands may not "
        "edit with a second one (409 `conflict`, nothing recorded)")


class BulkResumeItem(ResumeBody):
    """One interrupt of a bulk answer: which one, and what a single resume of it would carry."""

    session_id: Id
    interrupt_id: Id


class BulkResumeBody(Wire):
    """`POST /v1/interrupts/resume`: several interrupts answered at once, each as a single resume."""

    items: Annotated[list[BulkResumeItem], Field(min_length=1, max_length=MAX_BULK_ITEMS,
                                                 description="the interrupts, each named once")]


def _shape(model: type[BaseModel]) -> dict[str, dict[str, int | str]]:
    """A model's fields as the resume function checks them without pydantic, in declaration
    order: each one's type, string length bound, id pattern and list bounds, from its JSON schema."""
    kept = ("type", "maxLength", "pattern", "minItems", "maxItems")
    out: dict[str, dict[str, int | str]] = {}
    for name, spec in model.model_json_schema()["properties"].items():
        kinds = [k for k in spec.get("anyOf", [spec]) if k.get("type") not in (None, "null")]
        out[name] = {k: v for k, v in (kinds[0] if kinds else {}).items() if k in kept}
    return out


def resume_shape() -> dict[str, dict[str, int | str]]:
    """`ResumeBody`'s fields as the resume function checks them. The resume function reads them
    from `http/resume_shape.py`, which `resume_shape_module` writes (`make resume-shape`) and a
    unit test keeps current."""
    return _shape(ResumeBody)


def resume_shape_module() -> str:
    """The text of `http/resume_shape.py`: the single resume's fields, then the bulk answer's
    (its list's bounds, and each item's fields with the ones it requires)."""
    required = BulkResumeItem.model_json_schema()["required"]
    own = {k: v for k, v in _shape(BulkResumeItem).items() if k not in ResumeBody.model_fields}  # after the resume's
    return ('"""Made from `holdpoint.http.bodies.ResumeBody` and `BulkResumeBody` by `make resume-shape`; do not\n'
            'edit. The resume function checks a resume body against it (holdpoint.http.resuming) and so loads\n'
            'no pydantic."""\n\n'
            f"FIELDS: dict[str, dict[str, int | str]] = {json.dumps(resume_shape(), indent=4)}\n\n"
            f"BULK_FIELDS: dict[str, dict[str, int | str]] = {json.dumps(_shape(BulkResumeBody), indent=4)}\n\n"
            f"ITEM_FIELDS: dict[str, dict[str, int | str]] = {{**FIELDS, **{json.dumps(own, indent=4)}}}\n\n"
            f"ITEM_REQUIRED: tuple[str, ...] = {tuple(required)!r}\n")


MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=64)]
MetadataValue = Annotated[str, StringConstraints(max_length=256)]


class TokenIdentity(Wire):
    """Who a client token speaks for: the end user's id in the tenant's own terms."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    metadata: Annotated[dict[MetadataKey, MetadataValue], Field(max_length=16)] | None = None
    groups: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=128)]],
                      Field(max_length=32)] | None = None  # A2: the approver groups the token carries


class ClientTokenBody(Wire):
    """`POST /v1/client-tokens`: a short-lived token a backend hands a browser."""

    identity: TokenIdentity
    ttl_seconds: Annotated[int, Field(strict=True, ge=60, le=86_400), BeforeValidator(integral)] = 900
    session_id: Id | None = None


# --- errors ------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    """`param` names the field at fault; some errors add fields (`interrupt_ids`, `turn_id`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    code: str
    message: str
    param: str | None = None


class Error(BaseModel):
    """Holdpoint's refusal."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    error: ErrorDetail


class GatewayError(BaseModel):
    """API Gateway's own answer (no route, no or refused credentials, body over 10 MiB)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    message: str


ClaimName = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[\x21-\x7e]+$")]
"""A claim's name as a token carries it: printable ASCII, no spaces (`sub`, `cognito:groups`)."""


Endpoint = Annotated[str, StringConstraints(max_length=512)]


class CognitoPool(Wire):
    user_pool_id: Annotated[str, StringConstraints(max_length=64, pattern=COGNITO_POOL.pattern)] = Field(
        description="the user pool's id, its region first: `eu-west-1_AbC123`")
    domain: Endpoint | None = Field(None, description="the pool's hosted UI domain, "
                                    "`https://acme.auth.eu-west-1.amazoncognito.com`: the console signs in there")


AdmittedName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ADMITTED_CHARS)]


class Admit(Wire):
    """Who of the provider's people is let in at all: a stranger who signed up to the pool, or
    any account of a public issuer, is in none of these."""

    groups: list[AdmittedName] = Field(default_factory=list, max_length=MAX_ADMITTED, description=(
        "the provider's groups (the groups claim) whose members sign in"))
    subjects: list[AdmittedName] = Field(default_factory=list, max_length=MAX_ADMITTED, description=(
        "the people (the subject claim's values) who sign in whatever their groups"))


class IdentityProviderDeclaration(Wire):
    """The body of `PUT /v1/identity-provider`: a Cognito user pool or any OIDC issuer by its
    discovery URL (exactly one of the two), the app client id its tokens must be issued to, the
    claims that name the subject and carry the groups, and who of its people is admitted."""

    cognito: CognitoPool | None = None
    discovery_url: Annotated[str, StringConstraints(max_length=MAX_ISSUER_CHARS + len(DISCOVERY_SUFFIX))] | None = None
    client_id: Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[\x21-\x7e]+$")]
    admit: Admit = Field(description="at least one group or subject: the provider signs in no one else")
    subject_claim: ClaimName = "sub"
    groups_claim: ClaimName | None = None
    authorization_endpoint: Endpoint | None = None
    token_endpoint: Endpoint | None = None

    def urls(self) -> dict[str, str]:
        """The URLs the declaration names, by the field each is in, for the network guard's checks."""
        named = {"discovery_url": self.discovery_url, "authorization_endpoint": self.authorization_endpoint,
                 "token_endpoint": self.token_endpoint, "cognito.domain": self.cognito and self.cognito.domain}
        return {field: url for field, url in named.items() if url}

    @field_validator("discovery_url")
    @classmethod
    def _discovery(cls, url: str | None) -> str | None:
        if url is not None and not url.endswith(DISCOVERY_SUFFIX):
            raise ValueError(f"must end with {DISCOVERY_SUFFIX}, as OIDC Discovery places it under the issuer")
        return url

    def checked_provider(self) -> IdentityProvider:
        """`provider()`, with every URL the declaration names passed through the network guard: what
        `PUT /v1/identity-provider` and the admin CLI both store."""
        from holdpoint.outbound.netguard import check_url

        provider = self.provider()
        for field, url in self.urls().items():
            why = check_url(url, field)
            if why:
                raise Refusal("validation_error", why, field)
        return provider

    def provider(self) -> IdentityProvider:
        """The declaration as the store keeps it; a `Refusal` naming the field when it names no
        issuer or two, only one of the console's two endpoints, or admits no one."""
        if not (self.admit.groups or self.admit.subjects):
            raise Refusal("validation_error", "admit at least one group or subject: without it anyone the "
                          "provider signs in (a self sign-up, any account of a public issuer) would approve", "admit")
        if (self.authorization_endpoint is None) != (self.token_endpoint is None):
            raise Refusal("validation_error", "give both authorization_endpoint and token_endpoint, or neither",
                          "token_endpoint" if self.token_endpoint is None else "authorization_endpoint")
        if self.cognito is not None and self.discovery_url is None:
            if self.authorization_endpoint is not None:
                raise Refusal("validation_error", "a Cognito pool's endpoints come from `cognito.domain`",
                              "authorization_endpoint")
            pool, domain = self.cognito.user_pool_id, (self.cognito.domain or "").rstrip("/")
            return IdentityProvider("cognito", cognito_issuer(pool), self.client_id, self.subject_claim,
                                    self.groups_claim or COGNITO_GROUPS, pool,
                                    domain + HOSTED_AUTHORIZE if domain else None,
                                    domain + HOSTED_TOKEN if domain else None, *self._admitted())
        if self.discovery_url is not None and self.cognito is None:
            url = self.discovery_url
            return IdentityProvider("oidc", url[:-len(DISCOVERY_SUFFIX)], self.client_id, self.subject_claim,
                                    self.groups_claim or "groups", url, self.authorization_endpoint,
                                    self.token_endpoint, *self._admitted())
        raise Refusal("validation_error", "give exactly one of `cognito` (a user pool) or `discovery_url` "
                      "(any OIDC issuer)", "cognito")

    def _admitted(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """`admit`'s groups and subjects, each once, in the order declared."""
        return tuple(dict.fromkeys(self.admit.groups)), tuple(dict.fromkeys(self.admit.subjects))
