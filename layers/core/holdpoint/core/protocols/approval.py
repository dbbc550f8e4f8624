"""A2's approver policy as a declaration carries it (an agent's `approval`, a tool's, an interrupt's,
an MCP approval request's): the wire model the agent declaration and the client and MCP bodies
share, checked where it is declared."""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from typing import Annotated

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from holdpoint.core import policy
from holdpoint.core.policy import Approvers, Policy
from holdpoint.core.protocols import Origin, integral, needs_one_of

ApproverSubject = Annotated[str, StringConstraints(min_length=1, max_length=256)]
ApproverGroup = Annotated[str, StringConstraints(min_length=1, max_length=128)]


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

    def frozen(self) -> Approvers:
        return Approvers(_names(self.subjects), _names(self.groups))


class ApprovalPolicy(BaseModel):
    """A2: an approver policy as declared (agent `approval`, `tools[].approval`, an interrupt's
    `approval`), checked where it is declared: an empty list would name no one, and a quorum larger
    than the subjects named (with no group to draw on) could never be met."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    origins: Annotated[list[Origin], Field(min_length=1)] | None = None
    subjects: Annotated[list[ApproverSubject], Field(min_length=1, max_length=100)] | None = None
    groups: Annotated[list[ApproverGroup], Field(min_length=1, max_length=32)] | None = None
    forbid_requester: bool | None = Field(default=None, strict=True)
    quorum: Annotated[int, Field(strict=True, ge=1, le=policy.MAX_QUORUM), BeforeValidator(integral)] | None = None
    deny_resolves: bool | None = Field(default=None, strict=True)
    escalate_to: EscalateTo | None = None
    edit: bool | None = Field(default=None, strict=True, description="A3: `true` lets an approver change the "
                              "action's arguments as they approve (the tool's `input` schema checks the edit)")

    @field_validator("quorum")
    @classmethod
    def _reachable(cls, quorum: int | None, info: ValidationInfo) -> int | None:
        """A quorum larger than the named subjects (with no group to draw on) can never be met."""
        problem = policy.quorum_problem(quorum, info.data.get("subjects"), info.data.get("groups"))
        if problem:
            raise ValueError(problem)
        return quorum



    def frozen(self) -> Policy:
        """The policy as the core keeps it: made here, once, from the checked declaration."""
        origins = tuple(self.origins) if self.origins is not None else None
        return Policy(origins=origins, subjects=_names(self.subjects), groups=_names(self.groups),
                      forbid_requester=self.forbid_requester, quorum=self.quorum, deny_resolves=self.deny_resolves,
                      escalate_to=self.escalate_to.frozen() if self.escalate_to else None, edit=self.edit)


def _names(names: list[str] | None) -> tuple[str, ...] | None:
    return tuple(names) if names is not None else None


def policy_of(declared: ApprovalPolicy | None) -> Policy | None:
    """A declaration's policy as the core keeps it, or None where none was declared."""
    return declared.frozen() if declared is not None else None
