"""The protocols' wire models (pydantic models of their JSON), one module a protocol, apart from
the rules that read and answer them (the rest of `holdpoint.core`). This package's own module holds
the shapes every wire model shares: ids, bounded integers, the strict and open model bases, a chat
message, and the response-schema checks (A1).

By protocol: `worker` (the decision request, engine -> worker) and `worker_actions` (its answer),
`client` (what a client asks of a session), `approval`, and `runs` (what an external run is
delivered, which the SDK reads too). A2A's, MCP's and AG-UI's are their bridges' (`models` of
`holdpoint.bridges.a2a`, `.mcp`, `.agui`), over the shapes here. An agent's declaration is
`core.agent_config`; bodies only the HTTP API reads are `holdpoint.http.bodies`.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from holdpoint.core import answers, schemas
from holdpoint.core.ids import ID_REGEX
from holdpoint.core.jsontypes import JsonObject

if TYPE_CHECKING:
    JsonDict: TypeAlias = JsonObject
else:
    JsonDict = dict[str, Any]
"""A JSON object in a wire model, whose shape Holdpoint does not own. pydantic sees a dict of `Any`, as
these fields always were, so it validates and documents them unchanged (an object of any values;
JSON Schema `{"type": "object", "additionalProperties": true}`); every model reads it from parsed
JSON, so the checker reads it as the `JsonObject` it holds: a reader narrows before it indexes."""

Id = Annotated[str, StringConstraints(pattern=ID_REGEX)]
"""Ids we store in keys: bounded charset and length so keys and SFN names stay valid."""


def integral(value: Any) -> Any:
    """JSON has one number type, and JSON Schema's `integer` is any number with no fraction: `3.0`
    is the integer 3. A string, a boolean or `3.5` still fails the strict int check after this."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Attempt = Annotated[int, Field(strict=True, ge=1, le=1_000_000), BeforeValidator(integral)]
"""A call attempt: a strict integer as JSON Schema defines one (the document says `integer`)."""
ExpiresIn = Annotated[int, Field(strict=True, ge=1, le=31_536_000), BeforeValidator(integral)]
"""Seconds until an interrupt expires (at most a year)."""

Origin = Literal["worker", "client", "machine", "operator", "system"]
RemindAfter = Annotated[list[ExpiresIn], Field(min_length=1, max_length=10)]
"""A5: reminder delays in seconds (each 1 to a year), counted from when the branch is parked."""
RetentionDays = Annotated[int, Field(strict=True, ge=1, le=3_650), BeforeValidator(integral)]
"""A6: days a closed interrupt stays listable before DynamoDB's TTL deletes it."""
Comment = Annotated[str, StringConstraints(max_length=answers.MAX_COMMENT)]
"""A6: a note recorded with a resume's answer."""


def _response_schema(value: Any) -> Any:
    """A1: a response schema is refused where it is declared, naming its field."""
    if value is not None and (error := schemas.schema_error(value)):
        raise ValueError(f"response_schema {error}")
    return value


def _agui_schema(payload: Any) -> Any:
    """A1: AG-UI's `payload.responseSchema` is a response schema too, checked the same way."""
    if isinstance(payload, dict) and "responseSchema" in payload:
        error = schemas.schema_error(payload["responseSchema"])
        if error:
            raise ValueError(f"payload.responseSchema {error}")
    return payload


ResponseSchema = Annotated[JsonDict | bool | None, BeforeValidator(_response_schema)]
"""A JSON Schema the resume payload must satisfy (A1): an object or a boolean, as the document says."""
InterruptPayload = Annotated[Any, BeforeValidator(_agui_schema)]


class Wire(BaseModel):
    """Base for wire shapes: unknown fields are refused so typos name their field."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    def wire(self) -> JsonObject:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class Open(BaseModel):
    """Base for shapes the protocol lets grow (agent config, tool specs)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    def wire(self) -> JsonObject:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


# --- messages -----------------------------------------------------------------


class ToolCallFunction(Wire):
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Annotated[str, StringConstraints(max_length=262_144)] = "{}"


PUBLISHED_MODULE = "holdpoint.core.protocol"
"""The module the OpenAPI document qualifies `ToolCall` and `Message` by (AG-UI's models share both
names, so the document names each by module): the names as published, kept when the models moved."""


class ToolCall(Wire):
    __module__ = PUBLISHED_MODULE

    id: Id
    type: Literal["function"] = "function"
    function: ToolCallFunction


class Message(Wire):
    __module__ = PUBLISHED_MODULE

    id: Id | None = None
    role: Literal["system", "user", "assistant", "tool"]
    content: (Annotated[str, StringConstraints(max_length=262_144)]
              | Annotated[list[JsonDict], Field(max_length=1_000)] | None) = None
    tool_calls: Annotated[list[ToolCall], Field(max_length=128)] | None = None
    tool_call_id: Id | None = None
    name: Annotated[str, StringConstraints(max_length=128)] | None = None


def needs_one_of(*names: str) -> JsonObject:
    """A model validator's "one of these fields, not null" as JSON Schema, so the document states it."""
    return {"anyOf": [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in names]}
