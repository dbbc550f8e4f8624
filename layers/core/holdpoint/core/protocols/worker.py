"""The worker wire protocol's request (PROTOCOL.md §2): the decision request the engine sends a
worker, with its trigger, calls and message tree. What a worker answers is `protocols.worker_actions`;
`core.wire` builds these models from a session's state.

Field names follow the public Substructure worker protocol exactly, so a worker written for that
engine runs against Holdpoint unchanged.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from holdpoint.core.edits import arguments_to_run
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.protocols import JsonDict

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

    def wire(self) -> JsonObject:
        return self.model_dump(mode="json", exclude_unset=True)


class WireMessage(Out):
    """A recorded message (upstream `Message`): `id` always present. Holdpoint's own input limits
    do not apply to what it sends back."""

    id: str
    role: Role
    content: str | list[JsonDict] | None = None
    tool_calls: list[JsonDict] | None = None
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
    client: JsonDict | None = None  # Holdpoint addition: passed through from the input


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
    messages: list[JsonDict]
    tools: list[LlmTool] | None = None
    temperature: float | None = None
    max_completion_tokens: int | None = None
    reasoning: JsonDict | None = None


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
    message: JsonDict | None = None
    truncated: bool = False
    usage: Any = None
    cost: float | str | None = None
    error: str | None = None
    error_value: Any = None
    code: ErrorCode | None = None
    provider_code: str | None = None


class ResumedAnswer(Out):
    """One answer recorded on the interrupt (a quorum's are all listed): its verdict as `status`."""

    subject: str | None = None
    origin: str | None = None
    status: str | None = None
    channel: str | None = None
    comment: str | None = None
    at: str | None = None


class ResumedEdit(Out):
    """A3: the approver's edit the approval binds: `arguments` are the tool call's arguments to run
    with now (in place of the call's own), `action` the edited action (its new fingerprint),
    `original` the action as raised, `by` and `at` who edited it last and when."""

    arguments: Any = None
    action: JsonDict
    original: JsonDict
    by: JsonDict
    at: str | None = None


class InterruptResumed(Out):
    """`payload` is the answer the person gave, the same shape whatever channel carried it; the
    rest are Holdpoint additions saying how the interrupt was decided (PROTOCOL.md §2.3)."""

    type: Literal["interrupt.resumed"] = "interrupt.resumed"
    interrupt_id: str
    payload: Any = None
    verdict: Literal["approved", "denied", "cancelled", "answered"] | None = None
    responder: JsonDict | None = None
    channel: str | None = None
    expired: bool | None = None
    approvals: list[ResumedAnswer] | None = None
    receipt: str | None = None  # the signed approval receipt (PROTOCOL.md, "Approval receipts")
    edit: ResumedEdit | None = None  # A3: the approver's edit of the tool call's arguments

    def arguments_for(self, called: Any) -> Any:
        """The arguments to run the bound call with: `edit.arguments`, else the call's own."""
        return arguments_to_run(self.edit.model_dump() if self.edit is not None else None, called)


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
    actions: list[JsonDict]
    agent: JsonDict | None = None


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
    agent: JsonDict | None
    calls: list[CallView]
    pending_calls: int = Field(ge=0)
    messages: list[WireMessage]
    message_tree: MessageTree
    ancestry: list[str]
    attempts: int = Field(ge=0)
    deadline: str | None
    turn_id: str | None
