"""An agent's declaration (`PUT /v1/agents/{id}`): its LLM, tools, worker, sub-agents, budget,
retries, notify channels, approver policy (A2), interrupt timers (A5), retention (A6) and A2A card.

Open models (`extra="allow"`): the protocol lets a declaration grow.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    StringConstraints,
    Tag,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from holdpoint.core.answers import OnExpiry
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.notify import NotifyEvent, channel_of
from holdpoint.core.protocols import (
    ExpiresIn,
    Id,
    JsonDict,
    Open,
    RemindAfter,
    RetentionDays,
    Wire,
)
from holdpoint.core.protocols.approval import ApprovalPolicy as ApprovalPolicy


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


class ToolSpec(Open):
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]
    description: Annotated[str, StringConstraints(max_length=16_384)] | None = None
    input: JsonDict | None = None
    output: JsonDict | None = None
    handler: Literal["worker", "client"] | None = None
    approval: ApprovalPolicy | None = None  # A2: this tool's own approver policy (replaces the agent's)
    retry: JsonDict | None = None  # §4.5: its calls' retry policy, in Holdpoint's or upstream's names


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
    """The `llm` block: the provider, and the fields each provider defines and checks when it is
    called (docs/LLM_PROVIDERS.md), kept as declared."""

    provider: Literal["scripted", "bedrock", "openai", "worker"] = "scripted"

    def extra(self, key: str) -> Any:
        """A provider's field of the block, as declared (None when absent)."""
        return (self.model_extra or {}).get(key)


class WorkerConfig(Open):
    """Where decisions go: an HTTPS url, a Lambda ARN, or an SQS queue (the worker answers through
    `POST /v1/workers/submit`). `python` names an in-process callable registered in code (tests,
    benchmarks); the API refuses it from tenants."""

    url: Annotated[str, StringConstraints(max_length=2_048)] | None = None
    lambda_arn: Annotated[str, StringConstraints(max_length=256)] | None = None
    queue: Annotated[str, StringConstraints(max_length=1_024)] | None = None
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

    slack: JsonDict
    events: list[NotifyEvent] | None = Field(default=None, max_length=16, description="default: every event")


class EmailEntry(Wire):
    """A `notify` email channel; the fields of `email` are the email channel's to define."""

    email: JsonDict
    events: list[NotifyEvent] | None = Field(default=None, max_length=16, description="default: every event")
    approver: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        default=None, description="The subject the one-click links are minted for (default: the session's owner)")


NotifyEntry = Annotated[
    Annotated[WebhookEntry, Tag("notify.webhook")] | Annotated[SlackEntry, Tag("notify.slack")]
    | Annotated[EmailEntry, Tag("notify.email")],
    Discriminator(channel_of, custom_error_type="notify_channel",
                  custom_error_message="a notify entry is {url, secret?, events?, approver?}, {slack: {...}} "
                  "or {email: {to: [...]}, events?, approver?}"),
]
"""One `notify` entry: a webhook, a Slack channel or email, by the key it has (`core.notify.channel_of`)."""


class A2aConfig(Wire):
    """An agent's A2A server (PROTOCOL.md §8): whether its Agent Card is served without
    credentials (`public`), and what the card says of the agent."""

    public: bool = Field(default=False, strict=True, description="serve the Agent Card without credentials")
    name: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    description: Annotated[str, StringConstraints(max_length=4_096)] | None = None
    skills: list[JsonDict] | None = Field(default=None, max_length=64)
    push_secret: Annotated[str, StringConstraints(max_length=1_024)] | None = Field(
        default=None, description="the secret reference A2A push deliveries are signed with (as notify webhooks)")


TargetName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]


class RunTarget(Wire):
    """Where an external run's answers go (PROTOCOL.md §10), exactly one of: a Lambda function
    (asynchronous Invoke, under the deployment's allow-list), an SQS queue (under its allow-list), a
    signed HTTPS URL (as worker requests are signed, under the network guard), or the caller's own
    wait: a Step Functions task token or a Lambda durable function's callback, completed by Holdpoint."""

    lambda_: Annotated[str, StringConstraints(max_length=256)] | None = Field(default=None, alias="lambda")
    queue: Annotated[str, StringConstraints(max_length=1_024)] | None = None
    url: Annotated[str, StringConstraints(max_length=2_048)] | None = None
    secret: Annotated[str, StringConstraints(max_length=2_048)] | None = Field(
        default=None, description="the url target's HMAC secret reference (as a worker's)")
    step_functions: Literal[True] | None = None
    durable_function: Literal[True] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "RunTarget":
        kinds = [k for k in ("lambda_", "queue", "url", "step_functions", "durable_function")
                 if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("a run target is one of {lambda}, {queue}, {url, secret?}, {step_functions: true} "
                             "or {durable_function: true}")
        if self.secret is not None and self.url is None:
            raise ValueError("secret signs a url target's deliveries; only a url target has one")
        return self


class AgentConfig(Open):
    """A declaration, and the config in force in a session (`Header.agent`): frozen, so it never
    parts from the JSON the store keeps of it (`to_item`)."""

    model_config = ConfigDict(frozen=True)

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
    run_targets: Annotated[dict[TargetName, RunTarget], Field(max_length=16)] | None = None  # §10: external runs

    @field_validator("interrupt_remind_after", "interrupt_escalate_after")
    @classmethod
    def _before_expiry(cls, value: Any, info: ValidationInfo) -> Any:
        expires = info.data.get("interrupt_expires_in")
        if info.field_name == "interrupt_remind_after":
            _timers_before_expiry(value, None, expires)
        else:
            _timers_before_expiry(None, value, expires)
        return value

    def approval_for(self, tool: str | None) -> ApprovalPolicy | None:
        """A2: the policy in force for an interrupt bound to a call of `tool`: the tool's own
        `approval`, else the agent's (None: no policy declared)."""
        own = next((spec.approval for spec in self.tools if tool is not None and spec.name == tool
                    and spec.approval is not None), None)
        return own if own is not None else self.approval

    _item: "JsonObject | None" = PrivateAttr(default=None)

    def to_item(self) -> JsonObject:
        """The config as stores keep it and workers see it: the JSON it was read from, as it was
        (so an unchanged config keeps its digest and is never rewritten), else its wire form."""
        if self._item is None:
            self._item = self.wire()
        return self._item

    @classmethod
    def from_item(cls, body: JsonObject) -> "AgentConfig":
        """A config as `to_item` (or `PUT /v1/agents`) wrote it, checked as a declaration is."""
        return kept_as_read(body, cls.model_validate)


def kept_as_read(body: JsonObject, validate: Callable[[Any], AgentConfig]) -> AgentConfig:
    """`body` validated, keeping `body` itself as the config's item (`to_item`)."""
    config = validate(body)
    config._item = body
    return config


def agent_field(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A wire model's `agent` (a worker's answer): an object is kept as read (`to_item`), so an
    echoed config keeps its digest and bytes; its errors name `agent.<field>`."""
    if isinstance(value, dict):
        return kept_as_read(value, handler)
    return handler(value)


IN_PROCESS = "worker.python names in-process workers registered in code; declare worker.url or worker.lambda_arn"


def in_process_set(config: AgentConfig, kept: AgentConfig | None = None) -> bool:
    """Whether `config` sets `worker.python`, which only code may: a tenant's declaration may not
    name one, and a worker's answer may only keep the one in force (`kept`), never set another."""
    named = config.worker.python if config.worker is not None else None
    before = kept.worker.python if kept is not None and kept.worker is not None else None
    return named is not None and named != before


def config_of(agent: AgentConfig | None) -> AgentConfig:
    """The config in force, or the empty one (a session started without an agent)."""
    return agent if agent is not None else _empty()


@cache
def _empty() -> AgentConfig:
    """Built on first use: building the model at import would cost every cold start (bench/README.md (c))."""
    return AgentConfig()
