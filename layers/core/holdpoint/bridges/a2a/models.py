"""A2A 1.0's wire models (PROTOCOL.md §8): the JSON-RPC request and each method's params, with
ProtoJSON field names as the `a2a-sdk` client sends them. Unknown fields are ignored, as ProtoJSON
parsers do. The translations to and from sessions are `translation`.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from holdpoint.core.ids import ID_REGEX

Text = Annotated[str, StringConstraints(max_length=262_144)]
Name = Annotated[str, StringConstraints(max_length=256)]


class A2a(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class Part(A2a):
    """A message part: text, or JSON data (`raw` and `url` files are refused: nothing records them)."""

    text: Text | None = None
    data: Any = None
    raw: str | None = None
    url: str | None = None
    metadata: Mapping[str, object] | None = None
    mediaType: Name | None = None  # noqa: N815 - A2A's name
    filename: Name | None = None


class Message(A2a):
    messageId: Annotated[str, StringConstraints(min_length=1, max_length=128)]  # noqa: N815
    role: Literal["ROLE_USER", "ROLE_AGENT"]
    parts: Annotated[list[Part], Field(min_length=1, max_length=100)]
    contextId: Name | None = None  # noqa: N815
    taskId: Name | None = None  # noqa: N815
    metadata: Mapping[str, object] | None = None


ConfigId = Annotated[str, StringConstraints(pattern=ID_REGEX)]
Secret = Annotated[str, StringConstraints(min_length=1, max_length=4_096, pattern=r"^[\x21-\x7e]+$")]
"""A token or credential sent as an HTTP header value: visible ASCII only, so no CR/LF can add a
header and every delivery can send it."""


class Authentication(A2a):
    """How the receiver authenticates the push: sent as `Authorization: {scheme} {credentials}`."""

    scheme: Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9._~+-]{0,63}$")]
    credentials: Secret | None = None


class PushSpec(A2a):
    """A `TaskPushNotificationConfig` as `SendMessage`'s configuration carries it (its task is the
    one the message starts)."""

    id: ConfigId | None = None
    url: Annotated[str, StringConstraints(min_length=1, max_length=2_048)]
    token: Secret | None = None
    authentication: Authentication | None = None


class PushConfig(PushSpec):
    """`CreateTaskPushNotificationConfig`: a config for an existing task."""

    taskId: Annotated[str, StringConstraints(min_length=1, max_length=256)]  # noqa: N815


class PushRef(A2a):
    """`GetTaskPushNotificationConfig`, `DeleteTaskPushNotificationConfig`."""

    taskId: Annotated[str, StringConstraints(min_length=1, max_length=256)]  # noqa: N815
    id: Annotated[str, StringConstraints(min_length=1, max_length=256)]


class PushList(A2a):
    """`ListTaskPushNotificationConfigs` (a task has at most `MAX_PUSH_CONFIGS`: one page)."""

    taskId: Annotated[str, StringConstraints(min_length=1, max_length=256)]  # noqa: N815
    pageSize: Annotated[int, Field(ge=0, le=1_000)] | None = None  # noqa: N815
    pageToken: Annotated[str, StringConstraints(max_length=1_024)] | None = None  # noqa: N815


class Configuration(A2a):
    returnImmediately: bool = False  # noqa: N815
    historyLength: Annotated[int, Field(ge=0, le=1_000)] | None = None  # noqa: N815
    taskPushNotificationConfig: PushSpec | None = None  # noqa: N815


class SendMessage(A2a):
    message: Message
    configuration: Configuration | None = None
    metadata: Mapping[str, object] | None = None


class TaskRef(A2a):
    """`GetTask`, `CancelTask`, `SubscribeToTask`."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    historyLength: Annotated[int, Field(ge=0, le=1_000)] | None = None  # noqa: N815
    metadata: Mapping[str, object] | None = None


PUBLISHED_MODULE = "holdpoint.core.a2a"
"""The module the OpenAPI document qualifies `Request` by (MCP's model shares the name, so the document
names each by module): the name as published, kept apart from where the model is defined."""


class Request(A2a):
    """A JSON-RPC 2.0 request object (`id` absent for a notification, which gets no answer)."""

    __module__ = PUBLISHED_MODULE

    jsonrpc: Literal["2.0"]
    method: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    id: Annotated[str, StringConstraints(max_length=256)] | int | None = None
    params: Mapping[str, object] | None = None
