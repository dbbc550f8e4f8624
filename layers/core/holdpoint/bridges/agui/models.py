"""AG-UI's wire models (PROTOCOL.md §7): `RunAgentInput` and the messages and resume entries it
carries. Field names are AG-UI's (camelCase) as `@ag-ui/core` 1.0.0 defines them; unknown fields
are accepted and ignored, as AG-UI's schemas are open. The translations are `translation`.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from holdpoint.core.ids import ID_REGEX

Id = Annotated[str, StringConstraints(pattern=ID_REGEX)]


class AgUi(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class FunctionCall(AgUi):
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Annotated[str, StringConstraints(max_length=262_144)]


PUBLISHED_MODULE = "holdpoint.core.agui"
"""The module the OpenAPI document qualifies `ToolCall` and `Message` by (`core.protocols` has models
of both names, so the document names each by module): the names as published, kept apart from where
the models are defined."""


class ToolCall(AgUi):
    __module__ = PUBLISHED_MODULE

    id: Id
    type: Literal["function"]
    function: FunctionCall


class Message(AgUi):
    """An AG-UI message. `activity` and `reasoning` messages are the client's own and not recorded.
    The limits are a recorded message's (protocol.Message), so a message refused is named here."""

    __module__ = PUBLISHED_MODULE

    id: Id
    role: Literal["developer", "system", "assistant", "user", "tool", "activity", "reasoning"]
    content: (Annotated[str, StringConstraints(max_length=262_144)]
              | Annotated[list[dict[str, Any]], Field(max_length=1_000)] | dict[str, Any] | None) = None
    toolCalls: Annotated[list[ToolCall], Field(max_length=128)] | None = None  # noqa: N815 - AG-UI's name
    toolCallId: Id | None = None  # noqa: N815
    name: Annotated[str, StringConstraints(max_length=128)] | None = None


class ResumeEntry(AgUi):
    """An answer to one interrupt: resumes it through the ordinary resume path (A1, A3, A4 apply)."""

    interruptId: Id  # noqa: N815
    status: Literal["resolved", "cancelled"]
    payload: Any = None
    metadata: Mapping[str, object] | None = None
    arguments: dict[str, Any] | None = None  # Holdpoint addition (A3): the action's arguments, edited


class RunAgentInput(AgUi):
    threadId: Id  # noqa: N815
    runId: Id  # noqa: N815
    messages: Annotated[list[Message], Field(max_length=10_000)]
    resume: Annotated[list[ResumeEntry], Field(max_length=100)] | None = None
    state: Any = None
    tools: list[Mapping[str, object]] = []
    context: list[Mapping[str, object]] = []
    forwardedProps: Any = None  # noqa: N815
    parentRunId: str | None = None  # noqa: N815
    protocolVersion: str | None = None  # noqa: N815
