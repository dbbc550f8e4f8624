"""The worker wire protocol (PROTOCOL.md §2): the decision request the engine sends, the actions
a worker answers with, and `POST /v1/workers/submit`'s deferred answer.

Field names follow the public Substructure worker protocol exactly, so a worker written for that
engine runs against Holdpoint unchanged.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (docs/PERFORMANCE.md, (c)).
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from holdpoint.core import schemas
from holdpoint.core.agent_config import ApprovalPolicy
from holdpoint.core.outcomes import LlmOutcome, llm_reply
from holdpoint.core.shapes import (
    ExpiresIn,
    Id,
    InterruptPayload,
    Message,
    Open,
    RemindAfter,
    ResponseSchema,
    ToolCall,
    Wire,
    needs_one_of,
)
from holdpoint.core.state import OnExpiry

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
