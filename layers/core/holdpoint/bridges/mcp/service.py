"""The MCP server's tools (PROTOCOL.md §9): approvals for an agent that is not on the Holdpoint
engine. Each caller has one approvals session per agent (its id derived from the tenant, the
caller and the agent; created on first use, owned by the caller), and every approval is an
interrupt raised in it through the API raise (quotas, schemas, policies, the agent's notify
channels), answered through the resume path (A1-A4) and listed from the session or the inbox."""

from __future__ import annotations

import time
from collections.abc import Mapping

from pydantic import ValidationError

from holdpoint.bridges.mcp import models
from holdpoint.bridges.mcp import translation as mcp
from holdpoint.bridges.mcp.translation import Approval, Approvals, Complete, InputRequired, Task, ToolResult
from holdpoint.core import answers
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal, RpcError
from holdpoint.core.expiry import Declared
from holdpoint.core.ids import first_error
from holdpoint.core.inputs import start_session
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.protocols.approval import policy_of
from holdpoint.core.protocols.client import RaiseInterruptBody
from holdpoint.core.state import Interrupt, SessionState, derive, iso_ms
from holdpoint.ports import (
    Clock,
    Directory,
    Parking,
    Sealer,
    Sessions,
    SessionsAndAgents,
    SessionsAndInterrupts,
    WorkQueue,
)
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.inbox import InboxFilters, inbox
from holdpoint.services.resume import resume

STATE_PURPOSE = "mcp-request-state"
REASON = "approval"


def agent_for(store: Directory, caller: Caller, agent_id: str) -> AgentConfig:
    """The agent the endpoint names, in the caller's own tenant (404 otherwise)."""
    agent = store.get_agent(caller.tenant, agent_id)
    if agent is None:
        raise Refusal("not_found", f"agent {agent_id} not found")
    return AgentConfig.from_item(agent)


def session_id_of(caller: Caller, agent_id: str) -> str:
    """The caller's approvals session for this agent: the same id on every request (stateless)."""
    return derive("ses", "mcp", caller.tenant, caller.principal(), agent_id)


def _session(store: Sessions, caller: Caller, agent_id: str, agent: AgentConfig,
             clock: Clock) -> str:
    """The approvals session, created on first use; one found at its id is reused only when it is
    this caller's own approvals session for this agent (`sessions.claim`)."""
    caller.require_unbound()
    sid = session_id_of(caller, agent_id)
    if sessions.claim(store, caller, sid, agent_id=agent_id, kind="approvals", chosen=False) is not None:
        return sid

    def load() -> SessionState:
        found = sessions.claim(store, caller, sid, agent_id=agent_id, kind="approvals", chosen=False)
        if found is not None:
            return found
        state = SessionState.new(caller.tenant, sid, agent_id, now=clock(), identity=caller.identity(),
                                 end_user=caller.owner(), kind="approvals")
        start_session(state, agent)
        return state

    sessions.changed(store, load, lambda state: None, clock)
    return sid


def _own(store: Sessions, caller: Caller, agent_id: str, value: str, param: str) -> tuple[str, Interrupt]:
    """One of the caller's own approvals (in its approvals session for this agent); else not found."""
    sid, iid = mcp.split_id(value, param)
    missing = Refusal("not_found", f"approval {value[:100]} not found", param)
    if sid != session_id_of(caller, agent_id):
        raise missing
    try:
        state = sessions.claim(store, caller, sid, agent_id=agent_id, kind="approvals", chosen=False)
    except Refusal:
        raise missing from None
    interrupt = state.interrupts.get(iid) if state is not None else None
    if interrupt is None:
        raise missing
    return sid, interrupt


def _checked(args: models.RequestApproval) -> RaiseInterruptBody:
    """The raise as `POST .../interrupts` would take it, checked by the same model (A1, A2, A5)."""
    body = {"reason": REASON, "payload": mcp.interrupt_payload(args), "response_schema": args.response_schema,
            "approval": args.policy.model_dump(mode="json", exclude_none=True) if args.policy else None,
            "expires_in": args.expires_in}
    try:
        return RaiseInterruptBody.model_validate({k: v for k, v in body.items() if v is not None})
    except ValidationError as exc:
        param, message = first_error(exc)
        param = {"approval": "policy", "payload": "question"}.get(param.split(".")[0], param)
        raise Refusal("validation_error", message, f"arguments.{param}") from None


def request(store: SessionsAndAgents, queue: WorkQueue, sealer: Sealer, caller: Caller, agent_id: str,
            args: models.RequestApproval, capabilities: Mapping[str, object], request_id: str,
            clock: Clock = time.time) -> InputRequired | Task | ToolResult:
    """`request_approval`: the interrupt raised, answered as a task (the tasks extension), as the
    `input_required` form for the caller's own user, or (a client with neither) as the approval's
    id to poll with `get_approval`."""
    agent = agent_for(store, caller, agent_id)
    body = _checked(args)
    form: JsonObject | None = None
    if args.answered_by == "user":
        if not mcp.has_form_elicitation(capabilities):
            raise RpcError(mcp.MISSING_CAPABILITY, "answered_by `user` needs a client that declares form "
                               "elicitation", "arguments.answered_by",
                               requiredCapabilities={"elicitation": {"form": {}}})
        schema = body.declared_schema()
        form = mcp.elicitation_schema(schema if isinstance(schema, dict) else None, answers.declared_options(
            body.payload))
    sid = _session(store, caller, agent_id, agent, clock)
    raised = sessions.raise_interrupt(
        store, queue, caller, sid, reason=REASON, payload=body.payload, global_=False, interrupt_id=None,
        expires_in=body.expires_in, request_id=request_id, response_schema=body.declared_schema(),
        approval=policy_of(body.approval), declared=Declared.of(body), clock=clock, agent=agent)
    sid_, interrupt = _own(store, caller, agent_id, mcp.approval_id(sid, raised.interrupt_id), "id")
    if form is not None:
        state = sealer.seal(STATE_PURPOSE, {"tenant": caller.tenant, "subject": caller.subject, "agent": agent_id,
                                            "id": mcp.approval_id(sid_, interrupt.interrupt_id)})
        return {"resultType": "input_required", "requestState": state,
                "inputRequests": {interrupt.interrupt_id: mcp.elicitation(interrupt, form)}}
    if mcp.has_tasks(capabilities):
        return mcp.task_out(sid_, interrupt, iso_ms(clock()), created=True)
    out = mcp.approval_out(sid_, interrupt, policy=not caller.own_only)
    return mcp.tool_result(out, f"Approval {out['id']} is waiting for an approver; call get_approval with this id "
                                "until its status is no longer open.")


def answered_here(store: SessionsAndInterrupts, parking: Parking, sealer: Sealer, caller: Caller, agent_id: str,
                  state: str, responses: Mapping[str, object] | None) -> ToolResult:
    """The retried `request_approval` of the `input_required` form: the user's elicitation answer
    resumes the interrupt, through the resume path's checks, and the tool returns the approval."""
    sealed = sealer.unseal(STATE_PURPOSE, state)
    if sealed is None or (sealed.get("tenant"), sealed.get("subject"), sealed.get("agent")) != (
            caller.tenant, caller.subject, agent_id):
        raise RpcError(mcp.INVALID_PARAMS, "requestState is not one this server gave this caller", "requestState")
    sid, interrupt = _own(store, caller, agent_id, str(sealed.get("id")), "requestState")
    raw = (responses or {}).get(interrupt.interrupt_id)
    if interrupt.status == "open":
        if raw is None:
            raise RpcError(mcp.INVALID_PARAMS, "inputResponses answers the elicitation it was asked",
                               f"inputResponses.{interrupt.interrupt_id}")
        try:
            elicited = models.Elicited.model_validate(raw)
        except ValidationError as exc:
            param, message = first_error(exc)
            where = f"inputResponses.{interrupt.interrupt_id}.{param}"
            raise RpcError(mcp.INVALID_PARAMS, message, where) from None
        resume(store, parking, caller, sid, interrupt.interrupt_id, mcp.answer_from(elicited, interrupt),
               channel="mcp")
        sid, interrupt = _own(store, caller, agent_id, mcp.approval_id(sid, interrupt.interrupt_id), "requestState")
    return mcp.tool_result(mcp.approval_out(sid, interrupt, policy=not caller.own_only))


def get(store: Sessions, caller: Caller, agent_id: str, args: models.ApprovalRef) -> ToolResult:
    """`get_approval`: one of the caller's own approvals."""
    sid, interrupt = _own(store, caller, agent_id, args.id, "arguments.id")
    return mcp.tool_result(mcp.approval_out(sid, interrupt, policy=not caller.own_only))


def pending(store: SessionsAndInterrupts, sealer: Sealer, caller: Caller, agent_id: str,
            args: models.ListApprovals) -> ToolResult:
    """`list_pending_approvals`: the caller's own open approvals, oldest first; with `answerable`,
    the tenant's open interrupts this caller may answer (the inbox's `approver=me`)."""
    if args.answerable:
        rows = inbox(store, sealer, caller, args.limit, None, InboxFilters(approver_me=True))["interrupts"]
        found: Approvals = {"approvals": [
            {"id": mcp.approval_id(r["session_id"], r["interrupt_id"]), "status": r["status"],
             "question": (r.get("payload") or {}).get("message") if isinstance(r.get("payload"), dict)
             else r["reason"], "created_at": r["created_at"]} for r in rows]}
        return mcp.tool_result(found)
    try:
        state = sessions.claim(store, caller, session_id_of(caller, agent_id), agent_id=agent_id, kind="approvals",
                               chosen=False)
    except Refusal:
        state = None
    if state is None:
        none: Approvals = {"approvals": []}
        return mcp.tool_result(none)
    sid = state.header.session_id
    opened = sorted(state.open_interrupts(), key=lambda i: (i.created_at, i.interrupt_id))[:args.limit]
    listed: Approvals = {"approvals": [mcp.approval_out(sid, i, policy=not caller.own_only) for i in opened]}
    return mcp.tool_result(listed)


def answer(store: SessionsAndInterrupts, parking: Parking, caller: Caller, args: models.AnswerApproval) -> ToolResult:
    """`answer_approval`: the resume path as this caller (R17, A1-A4: a caller the policy does not
    admit is refused and nothing is recorded); any session the caller may see, not only its own."""
    sid, iid = mcp.split_id(args.id, "arguments.id")
    try:
        out = resume(store, parking, caller, sid, iid, args.payload, comment=args.comment, channel="mcp",
                     expect_fingerprint=args.expect_fingerprint, arguments=args.edited_arguments)
    except Refusal as exc:
        if exc.code == "not_found":
            raise Refusal("not_found", f"approval {args.id[:100]} not found", "arguments.id") from None
        exc.param = _param(exc.param)
        raise
    state = sessions.owned(store, caller, sid)
    interrupt = state.interrupts.get(iid)
    if interrupt is None:
        raise Refusal("not_found", f"approval {args.id[:100]} not found", "arguments.id")
    answered: Approval = mcp.approval_out(sid, interrupt, policy=not caller.own_only)
    answered["noop"] = out.noop
    return mcp.tool_result(answered)


def _param(param: str | None) -> str | None:
    if param and (param.startswith("payload") or param in ("comment", "expect_fingerprint")):
        return f"arguments.{param}"
    if param and param.startswith("arguments"):  # A3: the edit, as this tool names it
        return "arguments.edited_" + param
    return "arguments.id" if param in (None, "interrupt_id") else param


def task(store: Sessions, caller: Caller, agent_id: str, ref: models.TaskRef, clock: Clock = time.time
         ) -> Task:
    """`tasks/get`."""
    sid, interrupt = _own(store, caller, agent_id, ref.taskId, "taskId")
    return mcp.task_out(sid, interrupt, iso_ms(clock()))


def cancel(store: SessionsAndInterrupts, parking: Parking, caller: Caller, agent_id: str,
           ref: models.TaskRef) -> Complete:
    """`tasks/cancel`: the approval declined through the resume path (so only where the approver
    policy admits the caller); an approval already answered stays as it was."""
    sid, interrupt = _own(store, caller, agent_id, ref.taskId, "taskId")
    if interrupt.status == "open":
        resume(store, parking, caller, sid, interrupt.interrupt_id, dict(answers.CANCELLED), channel="mcp")
    return {"resultType": "complete"}
