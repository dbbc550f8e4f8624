"""The engine core: what is due in a session, the decision request, and applying outcomes.

Pure: no AWS calls. The step services (`services/step.py` and its neighbours) load state, ask
`next_work`, make the one external call the work needs, then apply its outcome here and commit.
What each action of an answer does is `actions.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from holdpoint.core import approvals, attention, budget, calls, expiry, retry, subagents, wire
from holdpoint.core import interrupts as rules
from holdpoint.core.actions import apply_action
from holdpoint.core.agent_config import IN_PROCESS, in_process_set
from holdpoint.core.calls import arm_deadline
from holdpoint.core.errors import ProtocolError, Refusal
from holdpoint.core.ids import first_error
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.proposals import propose
from holdpoint.core.protocols import Message
from holdpoint.core.protocols.worker import DecisionProposal, DecisionRequest, WireMessage
from holdpoint.core.protocols.worker_actions import UPSTREAM_ACTIONS, DecisionResponse
from holdpoint.core.state import Decision, DecisionVia, Delivery, Interrupt, SessionState, derive, iso
from holdpoint.core.turns import finish_turn, start_next_queued


@dataclass
class Work:
    kind: str  # run_llm | deliver
    id: str


def next_work(state: SessionState, now: float) -> Work | None:
    """The next thing due, intent already committed: LLM calls first, then the decision queue
    (front-of-queue resumes first, held decisions skipped, one at a time: a decision backing off
    blocks the ones behind it until its timer fires). Parks are the parking's (services/park.py)."""
    for call in state.open_calls():
        if call.kind == "llm_call" and call.handler == "engine" and (call.not_before or 0) <= now:
            return Work("run_llm", call.id)
    for decision in state.pending_decisions():
        if rules.is_held(state, decision):
            continue
        if (decision.not_before or 0) > now:
            return None
        return Work("deliver", decision.id)
    return None


# --- decision requests ---------------------------------------------------------------


def branch_path(state: SessionState, decision: Decision) -> list[JsonObject]:
    head = state.tree.branch_head(decision.anchor)
    return [n.message for n in state.tree.path(head)]


def wire_proposal(state: SessionState, decision: Decision, messages: list[WireMessage]) -> DecisionProposal | None:
    """The engine's proposal as an upstream `DecisionProposal`: the branch path as `messages` (so an
    echo appends nothing) and the actions; `null` when the continuation needs an action upstream
    lacks (`fail` after a failed LLM call), and the engine applies its own when the worker echoes it."""
    own = propose(state, decision)
    actions = _proposed_actions(own)
    if any(a.get("type") not in UPSTREAM_ACTIONS for a in actions):
        return None
    proposal = DecisionProposal(messages=messages, actions=actions)
    if "agent" in own:
        agent = own["agent"]
        if agent is not None and not isinstance(agent, dict):
            raise TypeError(f"a proposal's agent is not an object: {agent!r}")
        proposal.agent = agent
    return proposal


def _proposed_actions(own: JsonObject) -> list[JsonObject]:
    """The actions of one of `core.proposals`' proposals, each an object as its rules write them."""
    actions = own.get("actions") or []
    if not isinstance(actions, list):
        raise TypeError(f"a proposal's actions are not a list: {actions!r}")
    out: list[JsonObject] = []
    for action in actions:
        if not isinstance(action, dict):
            raise TypeError(f"a proposed action is not an object: {action!r}")
        out.append(action)
    return out


def build_request(state: SessionState, decision: Decision) -> JsonObject:
    """The decision request (PROTOCOL.md §2.2), built from the upstream-shaped wire models."""
    h = state.header
    policy = retry.policy(h.agent, "decision")
    open_calls = state.open_calls()
    messages = [WireMessage.model_validate(m) for m in branch_path(state, decision)]
    request = DecisionRequest(
        session_id=h.session_id,
        decision_id=decision.id,
        agent_id=h.agent_id,
        identity=wire.owner(state),
        trigger=wire.trigger(state, decision),
        proposed=wire_proposal(state, decision, messages),
        state=h.state,
        agent=h.agent.to_item() if h.agent is not None else None,
        calls=[wire.call_view(state, c) for c in open_calls],
        pending_calls=sum(1 for c in open_calls if c.kind in ("tool_call", "sub_agent")),
        messages=messages,
        message_tree=wire.message_tree(state),
        ancestry=h.ancestry,
        attempts=decision.attempts + 1,
        deadline=iso(state.now + policy.attempt_timeout_secs),
        turn_id=decision.turn_id,
    )
    return request.wire()


def own_answer(state: SessionState, decision: Decision) -> JsonObject:
    """What the engine does for a decision nobody decides (no worker, or a `null` answer)."""
    return propose(state, decision)


# --- applying a worker's response ------------------------------------------------------


def apply_response(state: SessionState, decision: Decision, response: DecisionResponse, now: float,
                   via: DecisionVia = "worker") -> None:
    if decision.status != "pending":
        return
    decision.status = "delivered"
    decision.via = via
    decision.attempts += 1
    state.touch(decision)
    kind = decision.trigger.get("type")
    state.emit("decision.delivered", decision_id=decision.id, trigger=kind)
    _delivered(state, decision, "delivered")
    attention.clear(state)
    h = state.header
    turn = state.turns.get(decision.turn_id or "")
    if turn is not None and turn.status == "suspended" and h.active_turn is None:
        turn.status = "running"
        h.active_turn = turn.id
        state.touch(turn)
        state.emit("turn.resumed", turn_id=turn.id)
    if response.state is not None:
        h.state = None if response.state == {} else response.state
    if response.agent is not None:
        if in_process_set(response.agent, h.agent):
            raise ProtocolError("agent.worker.python", IN_PROCESS)
        h.agent = response.agent
    branch = state.tree.branch_head(decision.anchor)
    for i, raw in enumerate(response.messages or []):
        if raw.get("id") in state.tree.nodes:
            continue
        try:
            msg = Message.model_validate(raw)
        except ValidationError as exc:
            raise ProtocolError(*first_error(exc, f"messages[{i}]")) from exc
        node_id = msg.id or derive("msg", h.session_id, decision.id, i)
        if node_id in state.tree.nodes:
            continue
        state.add_node(node_id, branch, msg.wire())
        state.emit("message.added", message_id=node_id, role=msg.role)
        branch = node_id
    for i, action in enumerate(response.actions or []):
        apply_action(state, decision, i, action, branch, now)
    # A call the decision left open gets its deadline (tool.execute answered `{}`: deferred).
    for call_id in {decision.call_id, _bound_call_id(state, decision)} - {None}:
        call = state.calls.get(call_id or "")
        if call is not None and call.status == "open" and kind in ("tool.execute", "interrupt.resumed"):
            arm_deadline(state, call, now)


def apply_deadline(state: SessionState, call_id: str, attempt: int, now: float, *, child_waiting: bool = False,
                   child_version: int | None = None) -> None:
    """A deadline timer fired for a call: sub-agents and tools have their own retry paths."""
    call = state.calls.get(call_id)
    if call is not None and call.kind == "sub_agent":
        subagents.apply_deadline(state, call_id, attempt, now, child_waiting=child_waiting,
                                 child_version=child_version)
    else:
        calls.apply_deadline(state, call_id, attempt, now)


def _bound_call_id(state: SessionState, decision: Decision) -> str | None:
    interrupt = state.interrupts.get(decision.interrupt_id or "")
    return interrupt.call_id if interrupt is not None else None


def fail_decision(state: SessionState, decision: Decision, error: str, param: str | None,
                  code: str = "protocol_error") -> None:
    """A worker that broke the protocol (or never answered): the decision fails, and its turn."""
    if decision.status != "pending":
        return
    decision.status = "failed"
    decision.attempts += 1
    state.touch(decision)
    _delivered(state, decision, "failed")
    attention.record(state, "failed", error)
    detail = {"code": code, "message": error}
    if param:
        detail["param"] = param
    state.emit("decision.failed", decision_id=decision.id, error=detail)
    finish_turn(state, decision.turn_id, ok=False, error=detail, notify=False)


RETRY_REASON_CHARS = 300
"""How much of a failed delivery's error a waiting decision keeps for the session view."""


def retry_decision(state: SessionState, decision: Decision, error: str, now: float) -> bool:
    """A delivery failed (timeout, 5xx, bad JSON): back off on a durable timer, or fail once the
    policy's attempts or total time are spent. False when the decision failed."""
    if decision.status != "pending":
        return False
    policy = retry.policy(state.header.agent, "decision")
    decision.first_at = decision.first_at or now
    attempt = decision.attempts + 1
    if attempt >= policy.max_attempts or now - decision.first_at >= policy.total_timeout_secs:
        fail_decision(state, decision, f"worker did not answer after {attempt} attempt(s): {error}", None,
                      code="deadline_exceeded")
        return False
    decision.attempts = attempt
    decision.last_error = error[:RETRY_REASON_CHARS]
    attention.record(state, "retrying", error)
    delay = policy.backoff(attempt)
    decision.not_before = now + delay
    state.touch(decision)
    state.emit("decision.retry", decision_id=decision.id, attempt=attempt, delay_secs=delay, error=error)
    state.schedule(delay, f"decision/{decision.id}/{attempt}")
    return True


def defer_decision(state: SessionState, decision: Decision, now: float) -> bool:
    """The worker took the decision and will answer through `POST /v1/workers/submit` (an HTTPS
    worker's 202). The decision stays current (pending, and first in line: the ones behind it
    wait) for the decision policy's attempt timeout; then a durable timer has it delivered again
    under the same `decision_id`, and a worker that never answers runs out the policy's attempts
    as a silent one does. False when it is no longer pending (a submit got there first)."""
    if decision.status != "pending":
        return False
    policy = retry.policy(state.header.agent, "decision")
    decision.first_at = decision.first_at or now
    attempt = decision.attempts + 1
    if attempt > policy.max_attempts or now - decision.first_at >= policy.total_timeout_secs:
        fail_decision(state, decision, f"worker deferred the decision {attempt - 1} time(s) and never submitted "
                      "an answer", None, code="deadline_exceeded")
        return False
    wait = policy.attempt_timeout_secs
    decision.attempts = attempt
    decision.not_before = now + wait
    state.touch(decision)
    state.emit("decision.deferred", decision_id=decision.id, attempt=attempt, until=iso(now + wait))
    state.schedule(wait, f"decision/{decision.id}/{attempt}/deferred")
    return True


def apply_submit(state: SessionState, decision_id: str, response: DecisionResponse, now: float) -> bool:
    """A worker's later answer (`POST /v1/workers/submit`), applied exactly once through the same
    path as an answer in the response body. Any pending decision is current: a fast worker may
    submit before its 202 is recorded. True when applied; False for a repeat of a submit that was
    applied (a no-op). Anything else is not current: 409 naming `decision_id`."""
    decision = state.decisions.get(decision_id) or wake_in_flight(state, decision_id)
    if decision is None:
        raise Refusal("not_found", f"decision {decision_id} not found", "decision_id")
    if decision.status == "delivered" and decision.via == "submit":
        return False
    if decision.status != "pending":
        how = "answered by the worker's response" if decision.status == "delivered" else decision.status
        raise Refusal("decision_not_current", f"decision {decision_id} is no longer current ({how})",
                      "decision_id", decision_id=decision_id, decision_status=decision.status)
    apply_response(state, decision, response, now, via="submit")
    return True


def apply_wake(state: SessionState, interrupt_id: str, outcome: str, generation: int | None = None,
               receipt: Callable[[Interrupt], str | None] | None = None) -> str | None:
    """Deliver a resume or an expiry: event always, `interrupt.resumed` only if the interrupt
    parked the active branch (R8). A wake for another generation of the interrupt (an execution
    of an earlier raise of the same id timing out) is a no-op. Returns what happened, for metrics.
    `receipt` signs the closed interrupt's approval receipt (core/receipts.py), kept on it once."""
    interrupt = state.interrupts.get(interrupt_id)
    if interrupt is None or interrupt.woken or generation not in (None, interrupt.generation):
        return None
    happened = "resumed"
    if interrupt.status == "open":
        if outcome != "expired":
            return None
        expiry.expire(state, interrupt)  # A5: the declared outcome, `cancel` by default
        happened = "expired"
    was_parking_active = interrupt.anchor is None or interrupt.anchor in state.tree.path_ids(state.tree.head_id)
    if interrupt.origin == "system" and interrupt.reason == budget.REASON:
        budget.apply_resume(state, interrupt.resolution)
    rules.take_edit(state, interrupt)  # A3: the bound call runs what was approved from here on
    interrupt.woken = True
    if receipt is not None and interrupt.receipt is None:
        interrupt.receipt = receipt(interrupt)
    state.touch(interrupt)
    decided = approvals.outcome(interrupt)
    state.emit("session.interrupt_resumed", interrupt_id=interrupt_id, payload=interrupt.resolution,
               responder=decided.fields()["responder"], expired=happened == "expired", generation=interrupt.generation,
               verdict=decided.verdict, channel=decided.channel)
    if not was_parking_active or state.header.kind == "run":
        # R8: the branch was left, nothing is delivered; a run's answers go to its target instead,
        # from the notifier (the runs bridge), where its delivery record says how it stands
        interrupt.delivery = "none"
    else:
        # The answer is stored once, on the interrupt: the trigger names it (and the generation it
        # answers) and delivery fills the payload in from the interrupt record (wire.trigger).
        trigger = {"type": "interrupt.resumed", "interrupt_id": interrupt_id, "generation": interrupt.generation}
        anchor = interrupt.anchor if interrupt.anchor is not None else state.tree.head_id
        state.enqueue(trigger, anchor=anchor, turn_id=interrupt.turn_id, priority=0,
                      key=resumed_key(interrupt), interrupt_id=interrupt_id)
    start_next_queued(state)
    return happened


def _delivered(state: SessionState, decision: Decision, how: Delivery) -> None:
    """An `interrupt.resumed` answered or failed for good: its interrupt says so (the console's
    "approved, waiting to be delivered" ends), while it is still the raise the decision answers."""
    interrupt = state.interrupts.get(decision.interrupt_id or "")
    if decision.trigger.get("type") != "interrupt.resumed" or interrupt is None or \
            decision.trigger.get("generation", interrupt.generation) != interrupt.generation:
        return
    interrupt.delivery = how
    state.touch(interrupt)


def resumed_key(interrupt: Interrupt) -> tuple[str, str, int]:
    """What the `interrupt.resumed` decision's id derives from: one per generation of the interrupt."""
    return ("resumed", interrupt.interrupt_id, interrupt.generation)


def resumes(decision: Decision, interrupt_id: str) -> bool:
    """The decision is the `interrupt.resumed` of this interrupt."""
    return decision.interrupt_id == interrupt_id and decision.trigger.get("type") == "interrupt.resumed"


def wake_in_flight(state: SessionState, decision_id: str) -> Decision | None:
    """The engine delivers a resume's `interrupt.resumed` in the step that commits its wake, so a
    worker that answered 202 may submit before the decision is recorded: find the resolved,
    unwoken interrupt whose decision that is, and apply its wake here (the same rule, so the same
    decision; the engine's own commit then finds it woken and answered). None for any other id."""
    for interrupt in state.interrupts.values():
        if interrupt.status != "open" and not interrupt.woken \
                and state.decision_id(resumed_key(interrupt)) == decision_id:
            apply_wake(state, interrupt.interrupt_id, "resumed")
            return state.decisions.get(decision_id)
    return None
