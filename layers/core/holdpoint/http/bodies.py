"""Bodies only the HTTP API reads or writes: `POST /v1/sessions`' inputs (which name their agent),
a resume, a client-token request, and the two error bodies (Holdpoint's `{"error": ...}` and
API Gateway's own `{"message": ...}`).
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

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
        "edited action (a new fingerprint) and a quorum's count restarts")


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
