"""Wire shapes of the worker protocol and the client API.

Field names follow the public Substructure worker protocol exactly, so a
worker written for that engine runs against Holdpoint unchanged.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating ~400 of them from strings (compile, then eval) added ~4 ms
# (15%) to this module's load on every cold start (docs/PERFORMANCE.md, (c)).
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from holdpoint.core import approvals, schemas
from holdpoint.core.ids import ACTION_TAGS as ACTION_TAGS
from holdpoint.core.ids import ID_PATTERN as ID_PATTERN
from holdpoint.core.ids import ID_REGEX as ID_REGEX
from holdpoint.core.ids import INPUT_TAGS as INPUT_TAGS
from holdpoint.core.ids import error_param as error_param
from holdpoint.core.ids import first_error as first_error
from holdpoint.core.notify import NotifyEvent, channel_of
from holdpoint.core.outcomes import LlmOutcome, llm_reply
from holdpoint.core.state import OnExpiry

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
RemindAfter = Annotated[list[ExpiresIn], Field(min_length=1, max_length=10)]
"""A5: reminder delays in seconds (each 1 to a year), counted from when the branch is parked."""
RetentionDays = Annotated[int, Field(strict=True, ge=1, le=3_650), BeforeValidator(_integral)]
"""A6: days a closed interrupt stays listable before DynamoDB's TTL deletes it."""
Comment = Annotated[str, StringConstraints(max_length=approvals.MAX_COMMENT)]
"""A6: a note recorded with a resume's answer."""


def _timers_before_expiry(remind: list[int] | None, escalate: int | None, expires: int | None,
                          prefix: str = "") -> None:
    """A5: a reminder or escalation at or after the expiry could never fire: refused where declared."""
    if expires is None:
        return
    for i, delay in enumerate(remind or []):
        if delay >= expires:
            raise ValueError(f"{prefix}remind_after[{i}] ({delay} s) is not before the expiry ({expires} s)")
    if escalate is not None and escalate >= expires:
        raise ValueError(f"{prefix}escalate_after ({escalate} s) is not before the expiry ({expires} s)")


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


ResponseSchema = Annotated[dict[str, Any] | bool | None, BeforeValidator(_response_schema)]
"""A JSON Schema the resume payload must satisfy (A1): an object or a boolean, as the document says."""
InterruptPayload = Annotated[Any, BeforeValidator(_agui_schema)]


class Wire(BaseModel):
    """Base for wire shapes: unknown fields are refused so typos name their field."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class Open(BaseModel):
    """Base for shapes the protocol lets grow (agent config, tool specs)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

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


ApproverSubject = Annotated[str, StringConstraints(min_length=1, max_length=256)]
ApproverGroup = Annotated[str, StringConstraints(min_length=1, max_length=128)]


def needs_one_of(*names: str) -> dict[str, Any]:
    """A model validator's "one of these fields, not null" as JSON Schema, so the document states it."""
    return {"anyOf": [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in names]}


class EscalateTo(BaseModel):
    """Approvers added to the policy once the interrupt is escalated (the escalation timer sets it)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, json_schema_extra=needs_one_of("subjects", "groups"))
    subjects: Annotated[list[ApproverSubject], Field(min_length=1, max_length=100)] | None = None
    groups: Annotated[list[ApproverGroup], Field(min_length=1, max_length=32)] | None = None

    @model_validator(mode="after")
    def _names_someone(self) -> "EscalateTo":
        if not self.subjects and not self.groups:
            raise ValueError("escalate_to names no one: give subjects or groups")
        return self


class ApprovalPolicy(BaseModel):
    """A2: an approver policy as declared (agent `approval`, `tools[].approval`, an interrupt's
    `approval`), checked where it is declared: an empty list would name no one, and a quorum larger
    than the subjects named (with no group to draw on) could never be met."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    origins: Annotated[list[Origin], Field(min_length=1)] | None = None
    subjects: Annotated[list[ApproverSubject], Field(min_length=1, max_length=100)] | None = None
    groups: Annotated[list[ApproverGroup], Field(min_length=1, max_length=32)] | None = None
    forbid_requester: bool | None = Field(default=None, strict=True)
    quorum: Annotated[int, Field(strict=True, ge=1, le=approvals.MAX_QUORUM), BeforeValidator(_integral)] | None = None
    deny_resolves: bool | None = Field(default=None, strict=True)
    escalate_to: EscalateTo | None = None

    @field_validator("quorum")
    @classmethod
    def _reachable(cls, quorum: int | None, info: ValidationInfo) -> int | None:
        """A quorum larger than the named subjects (with no group to draw on) can never be met."""
        problem = approvals.quorum_problem(quorum, info.data.get("subjects"), info.data.get("groups"))
        if problem:
            raise ValueError(problem)
        return quorum



class ToolSpec(Open):
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]
    description: Annotated[str, StringConstraints(max_length=16_384)] | None = None
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    handler: Literal["worker", "client"] | None = None
    approval: ApprovalPolicy | None = None  # A2: this tool's own approver policy (replaces the agent's)


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


class WebhookEntry(Wire):
    """A `notify` webhook: each chosen event POSTed, signed like worker requests (§2.7)."""

    url: Annotated[str, StringConstraints(max_length=2_048)]
    secret: Annotated[str, StringConstraints(max_length=2_048)] | None = Field(
        default=None, description="HMAC secret reference: `env:NAME` (allow-listed) or `secretsmanager:NAME`")
    events: list[NotifyEvent] | None = Field(default=None, max_length=16, description="default: every event")
    approver: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        default=None, description="The subject the one-click links are minted for (default: the session's owner)")


class SlackEntry(Wire):
    """A `notify` Slack channel; the fields of `slack` are the Slack channel's to define."""

    slack: dict[str, Any]
    events: list[NotifyEvent] | None = Field(default=None, max_length=16, description="default: every event")


NotifyEntry = Annotated[
    Annotated[WebhookEntry, Tag("notify.webhook")] | Annotated[SlackEntry, Tag("notify.slack")],
    Discriminator(channel_of, custom_error_type="notify_channel",
                  custom_error_message="a notify entry is {url, secret?, events?, approver?} or {slack: {...}}"),
]
"""One `notify` entry: a webhook or a Slack channel, by the key it has (`core.notify.channel_of`)."""


class A2aConfig(Wire):
    """An agent's A2A server (PROTOCOL.md §8): whether its Agent Card is served without
    credentials (`public`), and what the card says of the agent."""

    public: bool = Field(default=False, strict=True, description="serve the Agent Card without credentials")
    name: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    description: Annotated[str, StringConstraints(max_length=4_096)] | None = None
    skills: list[dict[str, Any]] | None = Field(default=None, max_length=64)
    push_secret: Annotated[str, StringConstraints(max_length=1_024)] | None = Field(
        default=None, description="the secret reference A2A push deliveries are signed with (as notify webhooks)")


class AgentConfig(Open):
    model: Annotated[str, StringConstraints(max_length=256)] | None = None
    llm: LlmConfig | None = None
    system: Annotated[str, StringConstraints(max_length=131_072)] | None = None
    tools: list[ToolSpec] = Field(default_factory=list, max_length=256)
    worker: WorkerConfig | None = None
    interrupt_expires_in: ExpiresIn | None = None
    interrupt_on_expiry: OnExpiry | None = None  # A5: the defaults of an interrupt's expiry outcome,
    interrupt_remind_after: RemindAfter | None = None  # reminders and escalation
    interrupt_escalate_after: ExpiresIn | None = None
    retention_days: RetentionDays | None = None  # A6: how long closed interrupts stay listable
    sub_agents: list[SubAgentSpec] | None = Field(default=None, max_length=64)
    budget: Budget | None = None
    retry: dict[str, RetryPolicy] | None = None
    triggers: dict[str, bool] | None = None  # opt-in triggers beyond upstream: {"turn.finished": true}
    notify: list[NotifyEntry] | None = Field(default=None, max_length=16)  # docs/NOTIFICATIONS.md
    approval: ApprovalPolicy | None = None  # A2: the default approver policy of this agent's interrupts
    a2a: A2aConfig | None = None  # PROTOCOL.md §8: the agent's A2A server and Agent Card

    @field_validator("interrupt_remind_after", "interrupt_escalate_after")
    @classmethod
    def _before_expiry(cls, value: Any, info: ValidationInfo) -> Any:
        expires = info.data.get("interrupt_expires_in")
        if info.field_name == "interrupt_remind_after":
            _timers_before_expiry(value, None, expires)
        else:
            _timers_before_expiry(None, value, expires)
        return value


# --- the decision request (engine -> worker) ----------------------------------------------
#
# Written from the Substructure protocol's `DecisionRequest` and the definitions it references
# (`SessionOwner`, `DecisionTrigger`, `DecisionProposal`, `Effect`, `MessageTree`, `Node`,
# `Control`, `LlmRequest`, `ToolInput`). Holdpoint's additions are extra fields, never a changed
# type. Outgoing models dump only the fields the builder set (`exclude_unset`), so a value sent
# as `null` is sent, and an optional field left out is left out.

TriggerType = Literal["session.start", "client.messages", "client.action", "tool.execute", "tool.finished",
                      "llm.execute", "llm.finished", "sub_agent.finished", "interrupt.resumed", "turn.finished"]
UPSTREAM_TRIGGERS: frozenset[str] = frozenset(
    {"session.start", "client.messages", "client.action", "tool.execute", "tool.finished", "llm.execute",
     "llm.finished", "sub_agent.finished", "interrupt.resumed"})
"""The trigger types of the upstream `DecisionTrigger`; `turn.finished` is Holdpoint's opt-in addition."""
UPSTREAM_ACTIONS: frozenset[str] = frozenset(
    {"llm.call", "tool.call", "tool.result", "tool.error", "llm.result", "llm.error", "sub_agent.spawn",
     "message.send", "interrupt", "done"})
"""The action types of the upstream `DecisionAction`; `fail` is Holdpoint's addition."""
EffectStatus = Literal["pending", "completed", "failed", "retry_scheduled", "queued"]
ErrorCode = Literal["provider_error", "rate_limited", "refused", "budget_exceeded", "deadline_exceeded"]
ERROR_CODES: frozenset[str] = frozenset(
    {"provider_error", "rate_limited", "refused", "budget_exceeded", "deadline_exceeded"})
InterruptOrigin = Literal["system", "machine", "frontend"]
ControlKind = Literal["interrupt", "resume"]
ToolHandler = Literal["worker", "client"]
LlmHandler = Literal["server", "worker"]
Role = Literal["system", "user", "assistant", "tool"]


class Out(BaseModel):
    """Base for what Holdpoint sends: the fields a builder sets are sent (even as `null`), the
    rest are left out; the `type`/`kind` tags are always sent."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    def model_post_init(self, context: Any, /) -> None:
        self.__pydantic_fields_set__.update(k for k in ("type", "kind") if k in type(self).model_fields)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)


class WireMessage(Out):
    """A recorded message (upstream `Message`): `id` always present. Holdpoint's own input limits
    do not apply to what it sends back."""

    id: str
    role: Role
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class SessionOwner(Out):
    tenant_id: str
    id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)


class SessionStart(Out):
    type: Literal["session.start"] = "session.start"


class ClientMessages(Out):
    type: Literal["client.messages"] = "client.messages"
    messages: list[WireMessage]
    new_from: int = Field(ge=0)
    client: dict[str, Any] | None = None  # Holdpoint addition: passed through from the input


class ClientAction(Out):
    type: Literal["client.action"] = "client.action"
    name: str
    args: Any = None


class ToolInput(Out):
    status: Literal["valid", "invalid", "malformed"]
    value: Any = None
    error: str | None = None


class ToolExecute(Out):
    type: Literal["tool.execute"] = "tool.execute"
    id: str
    name: str
    arguments: str
    input: ToolInput
    attempt: int = Field(ge=0)
    deadline: str | None = None


class Finished(Out):
    """How a call ended: `result`/`error` are strings (a non-string is sent as its JSON text);
    `result_value` and `error_value` (Holdpoint additions) carry a non-string value as it was given."""

    id: str
    ok: bool
    result: str | None = None
    error: str | None = None
    result_value: Any = None
    error_value: Any = None


class ToolFinished(Finished):
    type: Literal["tool.finished"] = "tool.finished"
    name: str


class SubAgentFinished(Finished):
    type: Literal["sub_agent.finished"] = "sub_agent.finished"
    session_id: str
    agent_id: str


class LlmTool(Out):
    name: str
    description: str = ""
    input: Any = None


class LlmRequest(Out):
    """Upstream `LlmRequest`: the `llm.call` as issued, with `model`, `messages` and `tools`
    filled from the config in force; the action's other fields (`id`, `stream`, `retry`) ride along."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[LlmTool] | None = None
    temperature: float | None = None
    max_completion_tokens: int | None = None
    reasoning: dict[str, Any] | None = None


class LlmExecute(Out):
    type: Literal["llm.execute"] = "llm.execute"
    id: str
    request: LlmRequest
    stream: bool = False
    attempt: int = Field(ge=0)
    deadline: str | None = None


class LlmFinished(Out):
    """`code` is one of the upstream error codes; `provider_code` (Holdpoint addition) keeps a
    provider's or worker's own code when it is none of them."""

    type: Literal["llm.finished"] = "llm.finished"
    id: str
    ok: bool
    message: dict[str, Any] | None = None
    truncated: bool = False
    usage: Any = None
    cost: float | str | None = None
    error: str | None = None
    error_value: Any = None
    code: ErrorCode | None = None
    provider_code: str | None = None


class InterruptResumed(Out):
    type: Literal["interrupt.resumed"] = "interrupt.resumed"
    interrupt_id: str
    payload: Any = None


class TurnFinished(Out):
    """Holdpoint addition, sent only when the agent opts in (`triggers: {"turn.finished": true}`)."""

    type: Literal["turn.finished"] = "turn.finished"


Trigger = Annotated[
    SessionStart | ClientMessages | ClientAction | ToolExecute | ToolFinished | LlmExecute | LlmFinished
    | SubAgentFinished | InterruptResumed | TurnFinished,
    Field(discriminator="type"),
]


class DecisionProposal(Out):
    """`messages` is the decision's branch path (echoing it appends nothing); `agent` is a
    Holdpoint addition on `session.start` (the declared config), as upstream's example workers read it."""

    messages: list[WireMessage]
    actions: list[dict[str, Any]]
    agent: dict[str, Any] | None = None


class ToolCallView(Out):
    kind: Literal["tool_call"] = "tool_call"
    id: str
    status: EffectStatus
    attempt: int = Field(ge=0)
    anchor: str | None = None
    deadline: str | None = None
    name: str
    arguments: str
    handler: ToolHandler


class SubAgentView(Out):
    kind: Literal["sub_agent"] = "sub_agent"
    id: str
    status: EffectStatus
    attempt: int = Field(ge=0)
    anchor: str | None = None
    deadline: str | None = None
    agent_id: str
    session_id: str
    name: str | None = None  # Holdpoint addition: the same as agent_id


class LlmCallView(Out):
    kind: Literal["llm_call"] = "llm_call"
    id: str
    status: EffectStatus
    attempt: int = Field(ge=0)
    anchor: str | None = None
    deadline: str | None = None
    handler: LlmHandler
    stream: bool


CallView = Annotated[ToolCallView | SubAgentView | LlmCallView, Field(discriminator="kind")]


class Control(Out):
    """An interrupt or resume marker; `holdpoint_origin` (addition) is Holdpoint's own origin."""

    id: str
    interrupt_id: str
    kind: ControlKind
    origin: InterruptOrigin
    reason: str = ""
    payload: Any = None
    holdpoint_origin: str | None = None


class MessageNode(Out):
    kind: Literal["message"] = "message"
    message: WireMessage
    parent_id: str | None = None


class ControlNode(Out):
    kind: Literal["control"] = "control"
    control: Control
    parent_id: str | None = None


class MessageTree(Out):
    nodes: list[Annotated[MessageNode | ControlNode, Field(discriminator="kind")]]
    head_id: str | None = None


class DecisionRequest(Out):
    session_id: str
    decision_id: str
    agent_id: str
    identity: SessionOwner
    trigger: Trigger
    proposed: DecisionProposal | None
    state: Any
    agent: dict[str, Any] | None
    calls: list[CallView]
    pending_calls: int = Field(ge=0)
    messages: list[WireMessage]
    message_tree: MessageTree
    ancestry: list[str]
    attempts: int = Field(ge=0)
    deadline: str | None
    turn_id: str | None


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
    handler: LlmHandler | None = None  # `worker`: the worker runs this call (an `llm.execute` follows)
    reasoning: dict[str, Any] | None = None


class ToolCallAction(Wire):
    type: Literal["tool.call"]
    id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Any = "{}"  # any JSON; a non-string is recorded as its JSON text
    retry: dict[str, Any] | None = None
    handler: ToolHandler | None = None  # overrides the declared tool's handler


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


class InterruptFields(Wire):
    """What raising an interrupt declares, by a worker's action or by `POST .../interrupts`."""

    interrupt_id: Id | None = None
    reason: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    payload: InterruptPayload = None
    response_schema: ResponseSchema = None
    approval: ApprovalPolicy | None = None  # A2: narrows the policy in force
    on_expiry: OnExpiry | None = None  # A5
    remind_after: RemindAfter | None = None
    escalate_after: ExpiresIn | None = None  # A5: adds the policy's `escalate_to` when it fires

    def declared_schema(self) -> Any:
        return schemas.declared(self.response_schema, self.payload)


class InterruptAction(InterruptFields):
    type: Literal["interrupt"]
    expires_in: int | None = Field(default=None, ge=1, le=31_536_000)


class LlmResponse(Open):
    """Upstream's normalized LLM response (`llm.result.response`)."""

    model: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    finish_reason: str | None = None
    usage: Any = None
    cost: float | str | None = None
    images: list[dict[str, Any]] | None = None


class LlmResultAction(Wire):
    """Upstream spells the reply `response` (an `LlmResponse`); Holdpoint also takes `message`."""

    model_config = ConfigDict(json_schema_extra=needs_one_of("response", "message"))
    type: Literal["llm.result"]
    id: Id | None = None
    attempt: int | None = None
    message: Message | None = None
    response: LlmResponse | None = None
    usage: dict[str, Any] | None = None
    cost: float | None = None
    truncated: bool = False

    @model_validator(mode="after")
    def _one_reply(self) -> "LlmResultAction":
        if self.message is None and self.response is None:
            raise ValueError("llm.result needs `response` (or `message`)")
        return self

    def outcome(self) -> LlmOutcome:
        """The reply as the engine records it: an assistant message, usage, cost, truncation."""
        if self.message is not None:
            return llm_reply(self.message.wire(), usage=self.usage, cost=self.cost, truncated=self.truncated)
        response = self.response
        assert response is not None
        message: dict[str, Any] = {"role": "assistant", "content": response.content}
        if response.tool_calls:
            message["tool_calls"] = [tc.wire() for tc in response.tool_calls]
        usage = response.usage if isinstance(response.usage, dict) else self.usage
        cost = float(response.cost) if response.cost is not None else self.cost
        return llm_reply(message, usage=usage, cost=cost,
                         truncated=self.truncated or response.finish_reason == "length")


class LlmErrorAction(Wire):
    type: Literal["llm.error"]
    id: Id | None = None
    attempt: int | None = None
    error: Any
    code: str | None = None
    retryable: bool | None = None
    detail: Any = None


class SubAgentSpawnAction(Wire):
    type: Literal["sub_agent.spawn"]
    session_id: Id | None = None
    agent_id: Id
    tool_call_id: Id
    message: Message | None = None
    retry: dict[str, Any] | None = None


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

    model_config = ConfigDict(extra="ignore", defer_build=True)

    # Checked as `Message`s when applied: one whose id is already in the tree (an echoed
    # proposal's view) is skipped unchecked, as Holdpoint's input limits are not its own output's.
    messages: list[dict[str, Any]] | None = None
    actions: list[Action] | None = None
    state: Any = None
    agent: dict[str, Any] | None = None


class WorkerSubmitBody(DecisionResponse):
    """`POST /v1/workers/submit`: a deferred decision's answer, named by `session_id` and
    `decision_id` beside the decision response's own fields (upstream's `SubmitDecisionRequest`).
    Unlike an answer in a response body, an unknown field is refused, naming it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    session_id: Id
    decision_id: Id
    span: dict[str, Any] | None = None  # upstream's trace context: accepted, not used

    def response(self) -> DecisionResponse:
        return DecisionResponse.model_construct(messages=self.messages, actions=self.actions, state=self.state,
                                                agent=self.agent)


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
    expect_fingerprint: str | None = None  # A3: else 409 stale_approval, as ResumeBody
    comment: Comment | None = None  # A6: recorded with the answer


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
    expect_fingerprint: str | None = Field(
        default=None, description="A3: resume only if the interrupt's `action.fingerprint` is this "
        "(else 409 `stale_approval`, nothing recorded)")
    comment: Comment | None = Field(default=None, description="recorded with the answer (at most 2,000 characters)")


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
    ttl_seconds: Annotated[int, Field(strict=True, ge=60, le=86_400), BeforeValidator(_integral)] = 900
    session_id: Id | None = None


class RaiseInterruptBody(InterruptFields):
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


