"""The worker wire protocol's answer (PROTOCOL.md §2): the actions a worker answers a decision
request with, the decision response that carries them, and `POST /v1/workers/submit`'s deferred
answer. The request they answer is `protocols.worker`.

Field names follow the public Substructure worker protocol exactly, so a worker written for that
engine runs against Holdpoint unchanged.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from holdpoint.core.agent_config import AgentConfig, agent_field
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.outcomes import LlmOutcome, llm_reply
from holdpoint.core.protocols import Id, JsonDict, Message, Open, ToolCall, Wire, needs_one_of
from holdpoint.core.protocols.client import InterruptFields
from holdpoint.core.protocols.worker import LlmHandler, ToolHandler

UPSTREAM_ACTIONS: frozenset[str] = frozenset(
    {"llm.call", "tool.call", "tool.result", "tool.error", "llm.result", "llm.error", "sub_agent.spawn",
     "message.send", "interrupt", "done"})
"""The action types of the upstream `DecisionAction`; `fail` is Holdpoint's addition."""


class LlmCallAction(Wire):
    type: Literal["llm.call"]
    id: Id | None = None
    model: str | None = None
    messages: list[Message] | None = None
    tools: list[JsonDict] | None = None
    temperature: float | None = None
    max_completion_tokens: int | None = None
    stream: bool | None = None
    retry: JsonDict | None = None
    handler: LlmHandler | None = None  # `worker`: the worker runs this call (an `llm.execute` follows)
    reasoning: JsonDict | None = None


class ToolCallAction(Wire):
    type: Literal["tool.call"]
    id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Any = "{}"  # any JSON; a non-string is recorded as its JSON text
    retry: JsonDict | None = None
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
    images: list[JsonDict] | None = None


class LlmResultAction(Wire):
    """Upstream spells the reply `response` (an `LlmResponse`); Holdpoint also takes `message`."""

    model_config = ConfigDict(json_schema_extra=needs_one_of("response", "message"))
    type: Literal["llm.result"]
    id: Id | None = None
    attempt: int | None = None
    message: Message | None = None
    response: LlmResponse | None = None
    usage: JsonDict | None = None
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
        message: JsonObject = {"role": "assistant", "content": response.content}
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
    retry: JsonDict | None = None


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
    messages: list[JsonDict] | None = None
    actions: list[Action] | None = None
    state: Any = None
    agent: AgentConfig | None = None  # the config in force from now on, checked as a declaration is

    _agent = field_validator("agent", mode="wrap")(agent_field)


class WorkerSubmitBody(DecisionResponse):
    """`POST /v1/workers/submit`: a deferred decision's answer, named by `session_id` and
    `decision_id` beside the decision response's own fields (upstream's `SubmitDecisionRequest`).
    Unlike an answer in a response body, an unknown field is refused, naming it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    session_id: Id
    decision_id: Id
    span: JsonDict | None = None  # upstream's trace context: accepted, not used

    def response(self) -> DecisionResponse:
        return DecisionResponse.model_construct(messages=self.messages, actions=self.actions, state=self.state,
                                                agent=self.agent)
