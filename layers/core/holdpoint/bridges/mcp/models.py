"""MCP's wire models (PROTOCOL.md §9, revision 2026-07-28): the JSON-RPC request, the approval
tools' arguments (`TOOLS`, whose JSON Schemas `tools/list` sends), a task's reference and an
elicitation's answer. The translations to and from sessions are `translation`.
"""

# No `from __future__ import annotations` here: pydantic evaluates every field annotation when a
# model class is created, and evaluating them from strings (compile, then eval) costs every cold
# start (bench/README.md (c)).
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from holdpoint.core import answers
from holdpoint.core.protocols import ExpiresIn
from holdpoint.core.protocols.approval import ApprovalPolicy

Text = Annotated[str, StringConstraints(min_length=1, max_length=4_096)]
RefId = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


PUBLISHED_MODULE = "holdpoint.core.mcp"
"""The module the OpenAPI document qualifies `Request` by (A2A's model shares the name, so the document
names each by module): the name as published, kept apart from where the model is defined."""


class Request(BaseModel):
    """A JSON-RPC 2.0 request object (`id` absent for a notification, which gets no answer)."""

    __module__ = PUBLISHED_MODULE

    model_config = ConfigDict(extra="forbid", defer_build=True)
    jsonrpc: Literal["2.0"]
    method: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    id: Annotated[str, StringConstraints(max_length=256)] | int | None = None
    params: Mapping[str, object] | None = None


class Option(Strict):
    label: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    value: Any


class RequestApproval(Strict):
    """`request_approval`'s arguments."""

    question: Text = Field(description="what the approvers are asked (shown in Slack, the link and the inbox)")
    options: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=256)] | Option],
                       Field(min_length=1, max_length=answers.MAX_OPTIONS)] | None = Field(
        default=None, description="the answers to choose from (a label, or {label, value})")
    response_schema: Mapping[str, object] | None = Field(default=None,
                                                         description="a JSON Schema the answer must satisfy")
    policy: ApprovalPolicy | None = Field(default=None, description="who may answer (narrows the agent's policy)")
    expires_in: ExpiresIn | None = Field(default=None, description="seconds until the approval expires")
    answered_by: Literal["approvers", "user"] = Field(
        default="approvers", description="`approvers`: a task that completes when a person answers anywhere; "
        "`user`: this client's own user answers now (input_required, an elicitation)")


class ApprovalRef(Strict):
    id: RefId = Field(description="the approval's id, as request_approval or list_pending_approvals gave it")


class AnswerApproval(Strict):
    id: RefId = Field(description="the approval's id")
    payload: Any = Field(description="the answer, e.g. {\"approved\": true}")
    comment: Annotated[str, StringConstraints(max_length=answers.MAX_COMMENT)] | None = None
    expect_fingerprint: Annotated[str, StringConstraints(max_length=256)] | None = Field(
        default=None, description="answer only if the approval still binds this action (its `action.fingerprint`)")
    edited_arguments: dict[str, Any] | None = Field(
        default=None, description="with an approval, where the policy allows `edit`: the action's arguments as "
        "edited, approved in their place (a new fingerprint)")


class ListApprovals(Strict):
    answerable: bool = Field(default=False, strict=True, description="list instead the open approvals of the "
                             "tenant this caller may answer")
    limit: Annotated[int, Field(strict=True, ge=1, le=100)] = 50


class CallTool(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: Mapping[str, object] | None = None
    inputResponses: Mapping[str, object] | None = None  # noqa: N815 - MCP's name
    requestState: Annotated[str, StringConstraints(max_length=8_192)] | None = None  # noqa: N815


class TaskRef(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)
    taskId: RefId  # noqa: N815


class Elicited(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)
    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, object] | None = None


TOOLS: dict[str, tuple[type[BaseModel], str]] = {
    "request_approval": (RequestApproval, "Ask for a person's approval, under the tenant's policies, quorums and "
                         "notify channels (Slack, links, the inbox). Returns a task that completes with the "
                         "answer (or, without the tasks extension, the approval's id to poll with get_approval)."),
    "list_pending_approvals": (ListApprovals, "The open approvals this caller requested."),
    "get_approval": (ApprovalRef, "One of this caller's approvals: open, or its answer and who gave it."),
    "answer_approval": (AnswerApproval, "Answer an approval as this caller (the approver policy decides whether "
                        "this caller may)."),
}
