"""Wire shapes of the worker protocol and the client API.

Field names follow the public Substructure worker protocol exactly, so a
worker written for that engine runs against Holdpoint unchanged.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$"
ID_PATTERN = re.compile(ID_REGEX)
Id = Annotated[str, StringConstraints(pattern=ID_REGEX)]
"""Ids we store in keys: bounded charset and length so keys and SFN names stay valid."""



def _integral(value: Any) -> Any:
    """JSON has one number type, and JSON Schema's `integer` is any number with no fraction: `3.0`
    is the integer 3. A string, a boolean or `3.5` still fails the strict int check after this."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Attempt = Annotated[int, Field(strict=True, ge=1, le=1_000_000), BeforeValidator(_integral)]
"""A call attempt: a strict integer as JSON Schema defines one (the document says `integer`)."""
ExpiresIn = Annotated[int, Field(strict=True, ge=1, le=31_536_000), BeforeValidator(_integral)]
"""Seconds until an interrupt expires (at most a year)."""

Origin = Literal["worker", "client", "machine", "operator", "system"]


class Wire(BaseModel):
    """Base for wire shapes: unknown fields are refused so typos name their field."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class Open(BaseModel):
    """Base for shapes the protocol lets grow (agent config, tool specs)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


# --- messages -----------------------------------------------------------------


class ToolCallFunction(Wire):
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Annotated[str, StringConstraints(max_length=262_144)] = "{}"


class ToolCall(Wire):
    id: Id
    type: Literal["function"] = "function"
    function: ToolCallFunction


class Message(Wire):
    id: Id | None = None
    role: Literal["system", "user", "assistant", "tool"]
    content: (Annotated[str, StringConstraints(max_length=262_144)]
              | Annotated[list[dict[str, Any]], Field(max_length=1_000)] | None) = None
    tool_calls: Annotated[list[ToolCall], Field(max_length=128)] | None = None
    tool_call_id: Id | None = None
    name: Annotated[str, StringConstraints(max_length=128)] | None = None


# --- agent config -------------------------------------------------------------


class ToolSpec(Open):
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]
    description: Annotated[str, StringConstraints(max_length=16_384)] | None = None
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    handler: Literal["worker", "client"] | None = None


class RetryPolicy(Wire):
    attempt_timeout_secs: float | None = Field(default=None, gt=0)
    total_timeout_secs: float | None = Field(default=None, gt=0)
    max_attempts: int | None = Field(default=None, ge=1, le=100)
    backoff_base_secs: float | None = Field(default=None, ge=1)
    backoff_max_secs: float | None = Field(default=None, ge=0)


class SubAgentSpec(Open):
    """A sub-agent the model may call like a tool; the call starts a child session."""

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]
    agent_id: Id
    description: str | None = None


class Budget(Open):
    max_cost: float = Field(ge=0)


class LlmConfig(Open):
    provider: Literal["scripted", "bedrock", "openai", "worker"] = "scripted"


class WorkerConfig(Open):
    """Where decisions go: an HTTPS url or a Lambda ARN. `python` names an in-process callable
    registered in code (tests, benchmarks); the API refuses it from tenants."""

    url: Annotated[str, StringConstraints(max_length=2_048)] | None = None
    lambda_arn: Annotated[str, StringConstraints(max_length=256)] | None = None
    python: Annotated[str, StringConstraints(max_length=256)] | None = None
    secret: Annotated[str, StringConstraints(max_length=2_048)] | None = Field(
        default=None, description="HMAC secret reference: `env:NAME` (allow-listed) or "
        "`secretsmanager:NAME` under the tenant's prefix; never the secret itself")
    timeout_secs: float = Field(default=30.0, gt=0, le=900, allow_inf_nan=False)


class AgentConfig(Open):
    model: Annotated[str, StringConstraints(max_length=256)] | None = None
    llm: LlmConfig | None = None
    system: Annotated[str, StringConstraints(max_length=131_072)] | None = None
    tools: list[ToolSpec] = Field(default_factory=list, max_length=256)
    worker: WorkerConfig | None = None
    interrupt_expires_in: ExpiresIn | None = None
    sub_agents: list[SubAgentSpec] | None = Field(default=None, max_length=64)
    budget: Budget | None = None
    retry: dict[str, RetryPolicy] | None = None


# --- triggers (engine -> worker) -------------------------------------------------


class SessionStart(Wire):
    type: Literal["session.start"] = "session.start"


class ClientMessages(Wire):
    type: Literal["client.messages"] = "client.messages"
    messages: list[dict[str, Any]]
    new_from: int
    client: dict[str, Any] | None = None


class ToolInput(Wire):
    status: Literal["valid", "invalid", "malformed"]
    value: Any = None
    error: str | None = None


class ToolExecute(Wire):
    type: Literal["tool.execute"] = "tool.execute"
    id: str
    name: str
    arguments: str
    input: ToolInput
    attempt: int = 1
    deadline: str | None = None


class ToolFinished(Wire):
    type: Literal["tool.finished"] = "tool.finished"
    id: str
    ok: bool
    name: str
    result: Any = None
    error: Any = None


class LlmFinished(Wire):
    type: Literal["llm.finished"] = "llm.finished"
    id: str
    ok: bool
    message: dict[str, Any] | None = None
    truncated: bool = False
    usage: dict[str, Any] | None = None
    cost: float | None = None
    error: Any = None
    code: str | None = None


class InterruptResumed(Wire):
    type: Literal["interrupt.resumed"] = "interrupt.resumed"
    interrupt_id: str
    payload: Any = None


class TurnFinished(Wire):
    type: Literal["turn.finished"] = "turn.finished"


Trigger = Annotated[
    SessionStart | ClientMessages | ToolExecute | ToolFinished | LlmFinished | InterruptResumed | TurnFinished,
    Field(discriminator="type"),
]


# --- actions (worker -> engine) ---------------------------------------------------


class LlmCallAction(Wire):
    type: Literal["llm.call"]
    id: Id | None = None
    model: str | None = None
    messages: list[Message] | None = None
    tools: list[dict[str, Any]] | None = None
    temperature: float | None = None
    max_completion_tokens: int | None = None
    stream: bool | None = None
    retry: dict[str, Any] | None = None


class ToolCallAction(Wire):
    type: Literal["tool.call"]
    id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: str | dict[str, Any] = "{}"
    retry: dict[str, Any] | None = None


class ToolResultAction(Wire):
    type: Literal["tool.result"]
    id: Id | None = None
    attempt: int | None = None
    result: Any


class ToolErrorAction(Wire):
    type: Literal["tool.error"]
    id: Id | None = None
    attempt: int | None = None
    error: Any
    retryable: bool | None = None
    code: str | None = None
    detail: Any = None


class InterruptAction(Wire):
    type: Literal["interrupt"]
    interrupt_id: Id | None = None
    reason: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    payload: Any = None
    expires_in: int | None = Field(default=None, ge=1, le=31_536_000)


class LlmResultAction(Wire):
    type: Literal["llm.result"]
    id: Id | None = None
    attempt: int | None = None
    message: Message
    usage: dict[str, Any] | None = None
    cost: float | None = None
    truncated: bool = False


class LlmErrorAction(Wire):
    type: Literal["llm.error"]
    id: Id | None = None
    attempt: int | None = None
    error: Any
    code: str | None = None
    retryable: bool | None = None


class SubAgentSpawnAction(Wire):
    type: Literal["sub_agent.spawn"]
    session_id: Id | None = None
    agent_id: Id
    tool_call_id: Id
    message: Message | None = None


class MessageSendAction(Wire):
    type: Literal["message.send"]
    session_id: Id
    message: Message


class DoneAction(Wire):
    type: Literal["done"]
    data: Any = None


class FailAction(Wire):
    type: Literal["fail"]
    error: Any


Action = Annotated[
    LlmCallAction
    | ToolCallAction
    | ToolResultAction
    | ToolErrorAction
    | LlmResultAction
    | LlmErrorAction
    | SubAgentSpawnAction
    | MessageSendAction
    | InterruptAction
    | DoneAction
    | FailAction,
    Field(discriminator="type"),
]


class DecisionResponse(Wire):
    """A worker's answer. `state` omitted or null keeps the state; `{}` clears it."""

    model_config = ConfigDict(extra="ignore")

    messages: list[Message] | None = None
    actions: list[Action] | None = None
    state: Any = None
    agent: dict[str, Any] | None = None


class Identity(Wire):
    id: str | None = None
    metadata: dict[str, Any] | None = None


class DecisionRequest(Wire):
    session_id: str
    decision_id: str
    agent_id: str
    identity: Identity
    trigger: dict[str, Any]
    proposed: dict[str, Any]
    state: Any = None
    agent: dict[str, Any] | None = None
    calls: list[dict[str, Any]]
    pending_calls: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    message_tree: dict[str, Any]
    ancestry: list[str]
    attempts: int
    deadline: str | None = None
    turn_id: str | None = None


# --- client inputs ----------------------------------------------------------------


class ClientMessageInput(Wire):
    type: Literal["client.message"]
    agent_id: Id | None = None
    turn_id: Id | None = None
    message: Message
    queue: bool = Field(default=False, strict=True)


class ClientMessagesInput(Wire):
    type: Literal["client.messages"]
    agent_id: Id | None = None
    turn_id: Id | None = None
    messages: Annotated[list[Message], Field(min_length=1, max_length=10_000)]
    client: dict[str, Any] | None = None


class ClientActionInput(Wire):
    type: Literal["client.action"]
    agent_id: Id | None = None
    turn_id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    args: Any = None
    queue: bool = Field(default=False, strict=True)


class ToolResultInput(Wire):
    type: Literal["tool.result"]
    id: Id
    attempt: Attempt | None = None
    result: Any = None


class ToolErrorInput(Wire):
    type: Literal["tool.error"]
    id: Id
    attempt: Attempt | None = None
    error: Any = None


class InterruptResumeInput(Wire):
    type: Literal["interrupt.resume"]
    interrupt_id: Id
    payload: Any = None


ClientInput = Annotated[
    ClientMessageInput
    | ClientMessagesInput
    | ClientActionInput
    | InterruptResumeInput
    | ToolResultInput
    | ToolErrorInput,
    Field(discriminator="type"),
]


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


class RaiseInterruptBody(Wire):
    reason: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    payload: Any = None
    interrupt_id: Id | None = None
    expires_in: ExpiresIn | None = None
    global_: bool = Field(default=False, alias="global", strict=True)


class SettleBody(Wire):
    """Settle a deferred or client call by id; `attempt` blocks results from a replaced attempt."""

    type: Literal["tool.result", "tool.error", "llm.result", "llm.error"]
    id: Id
    attempt: Attempt | None = None
    result: Any = None
    error: Any = None
    message: Message | None = None  # llm.result
    usage: dict[str, Any] | None = None
    cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    code: Annotated[str, StringConstraints(max_length=128)] | None = None


# --- errors ------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    """`param` names the field at fault; some errors add fields (`interrupt_ids`, `turn_id`)."""

    model_config = ConfigDict(extra="allow")
    code: str
    message: str
    param: str | None = None


class Error(BaseModel):
    """Holdpoint's refusal."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorDetail


class GatewayError(BaseModel):
    """API Gateway's own answer (no route, no or refused credentials, body over 10 MiB)."""

    model_config = ConfigDict(extra="forbid")
    message: str


def error_param(loc: tuple[Any, ...], tags: frozenset[str] = frozenset()) -> str:
    """Render a pydantic error location as `actions[0].reason`, dropping union tags."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in tags or (isinstance(part, str) and ("." in part or part.startswith("function-"))):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


ACTION_TAGS = frozenset(
    {"llm.call", "tool.call", "tool.result", "tool.error", "llm.result", "llm.error", "sub_agent.spawn",
     "message.send", "interrupt", "done", "fail"}
)
INPUT_TAGS = frozenset({"client.message", "client.messages", "client.action", "interrupt.resume",
                        "tool.result", "tool.error"})


def first_error(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    """The first validation error as (param, message), the param naming the field."""
    err = exc.errors()[0]
    param = error_param(tuple(err["loc"]), ACTION_TAGS | INPUT_TAGS)
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        param = f"{param}.type" if param else "type"
    if prefix:
        param = f"{prefix}.{param}" if param else prefix
    return param, err["msg"]
