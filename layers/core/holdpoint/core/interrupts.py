"""Interrupt rules (PROTOCOL.md §3): anchoring, parking, holding, voiding, privilege."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from holdpoint.core import answers, approvals, claims
from holdpoint.core.bound_action import BoundAction
from holdpoint.core.errors import DeclarationError, PolicyError, Refusal
from holdpoint.core.expiry import Declared, apply_declared
from holdpoint.core.policy import Policy
from holdpoint.core.proposals import tool_spec
from holdpoint.core.state import Call, Decision, Effect, Interrupt, SessionState, derive, epoch, iso_ms

ORIGIN_RANK = {"worker": 0, "client": 0, "machine": 1, "operator": 2, "system": 3}

# Follow-on decisions are held while their branch is parked (R10); a tool.execute is how an
# already-issued tool call runs (R6), and interrupt.resumed is the resume itself (R3, R8).
HOLDABLE = frozenset({"tool.finished", "llm.finished", "sub_agent.finished", "turn.finished", "client.messages"})

DEFAULT_PARK_SECONDS = 31_536_000  # one year, Step Functions' longest execution


def may_resume(caller_origin: str, interrupt_origin: str) -> bool:
    """A caller may clear an interrupt whose origin does not outrank it; operators clear system ones."""
    if caller_origin == "operator" and interrupt_origin == "system":
        return True
    return ORIGIN_RANK.get(interrupt_origin, 3) <= ORIGIN_RANK.get(caller_origin, -1)


def resumable_origins(caller_origin: str) -> tuple[str, ...]:
    return tuple(o for o in ORIGIN_RANK if may_resume(caller_origin, o))


def parks(state: SessionState, interrupt: Interrupt, node_id: str | None) -> bool:
    """An open interrupt parks the branch through `node_id` when global or its anchor is on it."""
    return interrupt.status == "open" and _anchored(state, interrupt, node_id)


def parking(state: SessionState, node_id: str | None) -> list[Interrupt]:
    return [i for i in state.open_interrupts() if parks(state, i, node_id)]


def active_parking(state: SessionState) -> list[Interrupt]:
    """Open interrupts that park the active path (R14: the session reads `interrupted`)."""
    return parking(state, state.tree.head_id)


def is_held(state: SessionState, decision: Decision) -> bool:
    """R10: a follow-on on a parked branch waits for the resume, and after it for the wake that
    queues `interrupt.resumed`: an interrupt the resume closed in the table whose wake the engine
    has not applied yet still holds it, so a step that runs in between delivers nothing early."""
    if decision.trigger.get("type") not in HOLDABLE:
        return False
    return bool(parking(state, decision.anchor)) or any(
        i.status != "open" and not i.woken and _anchored(state, i, decision.anchor) for i in state.interrupts.values())


def _anchored(state: SessionState, interrupt: Interrupt, node_id: str | None) -> bool:
    return interrupt.anchor is None or state.tree.is_ancestor_or_self(interrupt.anchor, node_id)


def park_seconds(expires_in: int | None) -> int:
    """The ParkBranch execution's TimeoutSeconds (R16): the expiry, or Step Functions' longest wait."""
    return expires_in or DEFAULT_PARK_SECONDS


PARK_RETRY_BASE_SECONDS = 2
PARK_RETRY_MAX_SECONDS = 300


def park_retry_seconds(attempt: int, left: float | None) -> int:
    """When a refused park is tried again: 2, 4, 8 ... seconds, at most 5 minutes, and never after
    the interrupt's expiry (`left` seconds away), which that retry then carries out."""
    delay: int = min(PARK_RETRY_BASE_SECONDS ** attempt, PARK_RETRY_MAX_SECONDS)
    return max(1, math.ceil(min(delay, left))) if left is not None else delay


def expires_at(expires_in: int | None, now: float) -> str | None:
    return iso_ms(now + expires_in) if expires_in else None


def answerable_until(interrupt: Interrupt) -> float:
    """The last moment an answer to this raise can count, so what a sealed button or link for it
    is good for: its expiry (R16), else the longest its branch can stay parked from its raise."""
    if interrupt.expires_at:
        return epoch(interrupt.expires_at)
    return epoch(interrupt.created_at) + DEFAULT_PARK_SECONDS


def holding(state: SessionState, call_id: str) -> Interrupt | None:
    """R12: the open interrupt a call is bound to, if any; the call stays open while it is."""
    return next((i for i in state.open_interrupts() if i.call_id == call_id), None)


def refuse_held(state: SessionState, call: Call) -> None:
    """R12: nothing from outside settles a call its open interrupt holds (only the answer to that
    interrupt's `interrupt.resumed`, once it is resolved): 409 `call_held`, nothing recorded."""
    interrupt = holding(state, call.id)
    if interrupt is not None:
        raise Refusal("call_held", f"call {call.id} is held by open interrupt {interrupt.interrupt_id}; "
                      "it settles once that interrupt is resumed", "id", interrupt_id=interrupt.interrupt_id)


def bound_action(state: SessionState, call_id: str | None) -> BoundAction | None:
    """A3: what an approval of the tool call `call_id` approves (`BoundAction`)."""
    call = state.calls.get(call_id or "")
    if call is None or call.kind != "tool_call":
        return None
    return action_of(state, call.name or "", call.arguments or "{}")


def action_of(state: SessionState, tool: str, arguments_text: str) -> BoundAction:
    """A3's binding of an action under the agent configuration in force."""
    agent = state.header.agent
    return BoundAction.of(tool, arguments_text, agent.to_item() if agent is not None else None)


def take_edit(state: SessionState, interrupt: Interrupt) -> None:
    """A3: a closed interrupt that approved an edited action leaves its open tool call holding the
    edited arguments (the last edit's canonical JSON), so whatever runs the call from here on (a
    deadline's retry, `calls.retry_tool`; the calls a decision request and the session view list)
    runs what was approved, never the arguments as raised. The interrupt's `edits` keep those."""
    call = state.calls.get(interrupt.call_id or "")
    if not interrupt.edits or call is None or call.kind != "tool_call" or call.status != "open":
        return
    edited = interrupt.edits[-1].action
    if edited.tool != call.name or approvals.outcome(interrupt).verdict != "approved":
        return
    call.arguments = edited.arguments
    state.touch(call)


def first_generation(state: SessionState) -> int:
    """The generation of a raise whose id has no interrupt stored: the session's event count so far.

    A closed interrupt may be gone (DynamoDB's TTL, A6) and its id raised again; that raise must
    not reuse a generation the deleted one had, since links, Slack buttons, park and wake
    messages, timers and the ParkBranch execution's name are all bound to one. The count is on
    the session's header, which is never deleted, and every raise adds an event: a raise again
    takes one more than its predecessor, which was at most the count before it, so no generation
    of an id exceeds the count before its raise, and a fresh raise's count is past them all."""
    return state.header.seq


def raise_interrupt(
    state: SessionState,
    *,
    interrupt_id: str | None,
    reason: str,
    payload: Any,
    origin: str,
    anchor: str | None,
    expires_in: int | None,
    call_id: str | None,
    turn_id: str | None,
    raised_by: str,
    response_schema: Any = None,
    approval: Policy | None = None,
    declared: Declared | None = None,
    requester: str | None = None,
    action: BoundAction | None = None,
) -> Interrupt | None:
    """Open an interrupt at `anchor` (None = global); an id already open is a no-op (R1). Its
    approver policy (A2) is `approval` narrowing the policy in force (`PolicyError` if it widens).
    A5's expiry outcome, reminders and escalation come from `declared`, else the agent's defaults;
    one that could only fire after the expiry raises `core.errors.DeclarationError` before anything
    changes, as do options that do not say whether they approve under a policy.
    `requester` is who asked (an API raise's caller); else the principal whose input started the
    turn. A policy that forbids the requester to approve refuses a raise whose requester is unknown
    (`PolicyError`), so the rule is never skipped. `action` is an external run's declared action
    (`action_of`); else the bound call's."""
    h = state.header
    iid = interrupt_id or derive("int", h.tenant, h.session_id, raised_by)
    existing = state.interrupts.get(iid)
    generation = first_generation(state)
    if existing is not None:
        if existing.status == "open" or existing.raised_by == raised_by:
            return None
        generation = existing.generation + 1  # a closed id raised again by a new step reopens it
        keep_answer(state, existing)
    policy = effective_policy(state, origin, call_id, approval)
    requester = requester or requester_of(state, turn_id)
    if policy is not None and policy.forbid_requester and not requester:
        raise PolicyError("forbid_requester", "the policy forbids the requester to approve, and this "
                                    "interrupt's requester is not known")
    unusable = answers.options_problem(payload) if policy is not None else None
    if unusable is not None:
        raise DeclarationError(unusable, "under an approver policy every option must say whether choosing it "
                               "approves: give it `approved: true` or `approved: false`")
    escalate_to = policy.escalate_to if policy is not None else None
    action = action or bound_action(state, call_id)
    seconds = expires_in or h.config().interrupt_expires_in
    interrupt = Interrupt(
        interrupt_id=iid,
        origin=origin,
        reason=reason,
        payload=payload,
        anchor=anchor,
        created_at=iso_ms(state.now),
        dedup_key=derive("park", h.tenant, h.session_id, iid, generation)[5:],
        generation=generation,
        expires_in=seconds,
        expires_at=expires_at(seconds, state.now),
        call_id=call_id,
        turn_id=turn_id,
        raised_by=raised_by,
        owner=(h.identity or {}).get("id"),
        end_user=h.end_user,
        response_schema=response_schema,
        action=action,
        edit_schema=edit_schema(state, policy, action),
        policy=policy.without_escalation().or_none() if policy is not None else None,
        requester=requester,
        escalate_to=escalate_to,
    )
    apply_declared(state, interrupt, declared or Declared())
    if existing is None:
        state.put(interrupt)
    else:
        state.interrupts[iid] = interrupt
        state.touch(interrupt)
    event: dict[str, Any] = {"interrupt_id": iid, "origin": origin, "reason": reason, "payload": payload}
    if anchor is not None:
        event["anchor"] = anchor
    if interrupt.action is not None:  # A3: what an approval approves, for every notification of the raise
        event["action"] = interrupt.action.to_item()
    state.emit("session.interrupted", **event)
    void_parked_llm_calls(state)
    state.effects.append(Effect(kind="start_park", interrupt_id=iid))
    return interrupt


def edit_schema(state: SessionState, policy: Policy | None, action: BoundAction | None) -> Any:
    """A3: the tool's `input` schema an approver's edit must satisfy, kept on the interrupt where
    its policy allows edits (None there: the tool declares none, so any object)."""
    if policy is None or not policy.allows_edit or action is None:
        return None
    spec = tool_spec(state, action.tool)
    return spec.input if spec is not None else None


def keep_answer(state: SessionState, closed: Interrupt) -> None:
    """An `interrupt.resumed` names the answer it delivers on the interrupt (stored once). A raise
    of the same id again replaces that answer, so a resume of the closed generation still waiting
    to be delivered takes its own copy (the answer and how it was decided) first."""
    for decision in state.pending_decisions():
        t = decision.trigger
        if t.get("type") == "interrupt.resumed" and t.get("interrupt_id") == closed.interrupt_id \
                and "payload" not in t and t.get("generation", closed.generation) == closed.generation:
            decision.trigger = {**t, **approvals.resumed(closed)}
            state.touch(decision)


def effective_policy(state: SessionState, origin: str, call_id: str | None,
                     approval: Policy | None) -> Policy | None:
    """A2: `approval` narrowing the policy in force (the bound tool's own, else the agent's). A
    system hold (a budget stop) is the operators' (R17), not an approval: no policy applies. A
    policy whose origins all rank below the interrupt's would admit no one (`PolicyError`)."""
    if origin == "system":
        return None
    call = state.calls.get(call_id or "")
    declared = state.header.config().approval_for(call.name if call is not None else None)
    policy = approvals.narrow(declared.frozen() if declared is not None else None, approval)
    origins = policy.origins if policy is not None else None
    if origins and not any(may_resume(o, origin) for o in origins):
        raise PolicyError("origins", f"none of the origins {', '.join(origins)} may clear an "
                                    f"interrupt raised by {origin} (R17): the policy would admit no one")
    return policy.or_none() if policy is not None else None


def requester_of(state: SessionState, turn_id: str | None) -> str | None:
    """A2: the principal that started the turn; the session's owner for a turn that did not say,
    or for an interrupt raised outside any turn."""
    turn = state.turns.get(turn_id or "")
    if turn is not None and turn.requester:
        return turn.requester
    return claims.principal_of(state.header) if (state.header.identity or {}).get("id") else None


WriteRefusal = Literal["noop", "forbidden", "not_found", "changed", "raced", "expired"]


@dataclass(frozen=True, slots=True)
class Checked:
    """What a resume checked on the interrupt it read, and its one write is conditioned on."""

    allowed_origins: tuple[str, ...]
    owner: str | None = None
    generation: int | None = None
    seen: int | None = None  # A2: the answers the caller read
    now: str | None = None  # R16: when the answer was given (ISO, ms): it counts only before `expires_at`


def write_refusal(found: Interrupt | None, checked: Checked) -> WriteRefusal | None:
    """Why an answer may not be written to the interrupt as it is now (None: it may): the one rule
    both stores apply through `refused`, the DynamoDB one to the item its failed condition returns."""
    if found is None:
        return "noop"
    if checked.owner is not None and found.owner != checked.owner:
        return "not_found"
    if found.status != "open":
        return "noop"
    if checked.generation is not None and found.generation != checked.generation:
        return "changed"
    if past_deadline(found, checked.now):
        return "expired"
    if checked.seen is not None and len(found.approvals) != checked.seen:
        return "raced"
    if found.origin not in checked.allowed_origins:
        return "forbidden"
    return None


def past_deadline(interrupt: Interrupt, now: str | None) -> bool:
    """R16: an answer given at or after the interrupt's `expires_at` is too late, whether or not
    the expiry has been applied yet (times compare as the ISO text both are written in)."""
    return now is not None and interrupt.expires_at is not None and interrupt.expires_at <= now


def refused(found: Interrupt | None, checked: Checked) -> tuple[WriteRefusal, Interrupt | None] | None:
    """What a store answers for an answer it may not write (None: it may): why (`write_refusal`),
    and the interrupt as it is now, withheld from a caller it is `not_found` to."""
    why = write_refusal(found, checked)
    if why is None:
        return None
    return why, (None if why == "not_found" else found)


def llm_call_parked(state: SessionState, call: Call) -> bool:
    return call.kind == "llm_call" and bool(parking(state, call.anchor))


def void_call(state: SessionState, call: Call, reason: str) -> None:
    call.status = "voided"
    state.touch(call)
    state.emit("call.voided", call_id=call.id, kind=call.kind, anchor=call.anchor, reason=reason)


def void_parked_llm_calls(state: SessionState) -> None:
    """R6: LLM calls in flight on a parked branch are voided; tools and sub-agents go on."""
    for call in state.open_calls():
        if llm_call_parked(state, call):
            void_call(state, call, "parked")


def void_llm_calls_off_path(state: SessionState, left_head: str | None) -> None:
    """PROTOCOL.md §4: moving the head away voids LLM calls in flight on the branch left."""
    active = state.tree.path_ids(state.tree.head_id)
    for call in state.open_calls():
        if call.kind != "llm_call" or call.anchor is None:
            continue
        on_left = state.tree.is_ancestor_or_self(call.anchor, left_head)
        if on_left and call.anchor not in active:
            void_call(state, call, "head_moved")


def has_work(state: SessionState) -> bool:
    """Work the engine still owes: a resume not yet delivered, an LLM call, a deliverable decision."""
    if any(i.status != "open" and not i.woken for i in state.interrupts.values()):
        return True
    if any(c.kind == "llm_call" for c in state.open_calls()):
        return True
    return any(not is_held(state, d) and d.trigger.get("type") != "turn.finished" for d in state.pending_decisions())


def status(state: SessionState) -> str:
    """R14: status read at the head."""
    if active_parking(state):
        return "interrupted"
    if state.header.active_turn or has_work(state):
        return "running"
    last = state.turns.get(state.header.last_turn or "")
    if last is not None and last.status == "done":
        return "done"
    return "idle"
