"""What a client asks of a session (PROTOCOL.md §4): the inputs `core.inputs` applies, a call's
settlement (`services.settle`), and an interrupt raised by a client (`POST .../interrupts` and
MCP's `request_approval` check it with the same model, whose fields a worker's `interrupt` action
declares too, `protocols.worker_actions`). The HTTP-only bodies are `holdpoint.http.bodies`.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from holdpoint.core import schemas
from holdpoint.core.answers import OnExpiry
from holdpoint.core.protocols import (
    Attempt,
    Comment,
    ExpiresIn,
    Id,
    InterruptPayload,
    JsonDict,
    Message,
    RemindAfter,
    ResponseSchema,
    Wire,
)
from holdpoint.core.protocols.approval import ApprovalPolicy


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
    client: JsonDict | None = None


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
    arguments: JsonDict | None = None  # A3: the approver's edit of the action, as ResumeBody


ClientInput = Annotated[
    ClientMessageInput
    | ClientMessagesInput
    | ClientActionInput
    | InterruptResumeInput
    | ToolResultInput
    | ToolErrorInput,
    Field(discriminator="type"),
]


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
    usage: JsonDict | None = None
    cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    code: Annotated[str, StringConstraints(max_length=128)] | None = None


class RunAction(Wire):
    """What an approval approves (A3): the tool the run will call and its arguments (any JSON)."""

    tool: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Any = None


class RunInterrupt(InterruptFields):
    """One interrupt an external run raises (PROTOCOL.md §10)."""

    expires_in: ExpiresIn | None = None
    action: RunAction | None = None


class RunCallback(Wire):
    """The caller's own wait a `step_functions` or `durable_function` target completes."""

    task_token: Annotated[str, StringConstraints(min_length=1, max_length=2_048)] | None = None
    callback_id: Annotated[str, StringConstraints(min_length=1, max_length=2_048)] | None = None


class RunInterruptsBody(Wire):
    """`POST /v1/runs/{run_id}/interrupts`: raise a run's interrupts; answers go to `target`, one of
    the agent's `run_targets`, each as it closes (`each`) or all once the batch has (`all`). With no
    target the run reads its answers itself (`GET /v1/runs/{run_id}`, its session's event stream)."""

    agent_id: Id
    target: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_\-]{1,64}$")] | None = None
    deliver: Literal["each", "all"] | None = Field(
        default=None, description="`each` (the default) or `all`; a target that completes one wait takes `all`")
    state: Any = None
    callback: RunCallback | None = None
    interrupts: Annotated[list[RunInterrupt], Field(min_length=1, max_length=20)]
