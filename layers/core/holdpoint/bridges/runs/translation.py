"""External runs (PROTOCOL.md §10): approvals for a run Holdpoint does not execute.

An agent framework's run (Strands, LangGraph, the OpenAI Agents SDK) or an AWS wait (a Step
Functions task token, a Lambda durable function's callback) raises interrupts in a session of its
own (`kind: "run"`, one per caller, agent and run id), parked like any other: answered from every
channel, under the agent's policies, quorums, expiry and audit. When they close, the answers are
delivered to a target the agent declares (`run_targets`), never one named per request: one delivery
per interrupt (`deliver: "each"`) or one when all of the run's open batch have closed (`"all"`),
each under a stable id the receiver dedupes on, with the run's opaque `state` Holdpoint held.

Pure: the run service raises through here, the notifier asks `deliveries` what a closing event
delivers; the channels (`channels.py`) carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from holdpoint.core import approvals
from holdpoint.core import interrupts as rules
from holdpoint.core.bound_action import digest
from holdpoint.core.expiry import Declared
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.policy import Policy
from holdpoint.core.protocols.runs import RunDelivery
from holdpoint.core.state import Interrupt, SessionState, derive

Deliver = Literal["each", "all"]
TARGET_KINDS = ("lambda", "queue", "url", "step_functions", "durable_function")
"""What a declared target is, by the key that names it."""
CHANNELS = {"lambda": "run.lambda", "queue": "run.queue", "url": "run.url", "step_functions": "run.step_functions",
            "durable_function": "run.durable_function"}
"""A target's kind, and the notifier channel that delivers to it (`channels.py`)."""
CALLBACK_KINDS = {"step_functions": "task_token", "durable_function": "callback_id"}
"""The targets that complete the caller's own wait, and the field of `callback` each needs."""
MAX_STATE_BYTES = 131_072
"""A run's opaque state (an OpenAI Agents `RunState`, say) Holdpoint holds, as compact JSON at most."""


def target_kind(target: Mapping[str, object]) -> str | None:
    """The kind of a declared target (`{lambda: ARN}`, `{queue: URL}`, `{url, secret?}`, ...)."""
    found = [k for k in TARGET_KINDS if target.get(k) not in (None, False)]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class RunInterrupt:
    """One interrupt a run raises, as its wire model (`RunInterruptsBody`) checked it."""

    interrupt_id: str | None
    reason: str
    payload: JsonValue
    response_schema: JsonValue
    approval: Policy | None
    expires_in: int | None
    declared: Declared
    tool: str | None = None
    arguments: str | None = None  # the action's arguments as JSON text


def open_run(state: SessionState, run_id: str, target: str | None, deliver: Deliver, run_state: JsonValue,
             callback: JsonObject | None) -> None:
    """Record the run on its session, or its newer state and callback on a later raise: the state
    handed back is always the one the run last gave."""
    run = dict(state.header.run or {"id": run_id, "batch": []})
    run.update(target=target, deliver=deliver)
    if run_state is not None:
        run["state"] = run_state
    if callback:
        run["callback"] = callback
    state.header.run = run


def raise_all(state: SessionState, asked: list[RunInterrupt], *, origin: str, requester: str) -> list[str]:
    """Raise each interrupt of a run (global: a run has no conversation here), bound to its declared
    action (A3). An id already open, or closed and raised by this run before, is a no-op, so a
    retried request raises nothing twice. Returns the ids, in order."""
    run = state.header.run or {}
    ids: list[str] = []
    for i, one in enumerate(asked):
        iid = one.interrupt_id or derive("int", state.header.tenant, state.header.session_id, run.get("id"), i)
        action = rules.action_of(state, one.tool, one.arguments or "{}") if one.tool else None
        rules.raise_interrupt(state, interrupt_id=iid, reason=one.reason, payload=one.payload, origin=origin,
                              anchor=None, expires_in=one.expires_in, call_id=None, turn_id=None,
                              raised_by=f"run:{run.get('id')}:{iid}", response_schema=one.response_schema,
                              approval=one.approval, declared=one.declared, requester=requester, action=action)
        ids.append(iid)
    batch = [b for b in run.get("batch") or [] if _open(state, b)]
    run["batch"] = [*batch, *(i for i in ids if i not in batch)]  # a closed batch's ids make way for a new one
    state.header.run = run
    return ids


def _open(state: SessionState, interrupt_id: str) -> bool:
    found = state.interrupts.get(interrupt_id)
    return found is not None and found.status == "open"


def deliveries(state: SessionState, data: Mapping[str, Any]) -> list[tuple[str, JsonObject]]:
    """What one closing event (`session.interrupt_resumed` data) of a run session delivers, as
    (key, body): its own answer (`each`), or every answer of the batch once the last of it closed
    (`all`); nothing for another session, a stale generation or a batch still open."""
    run = state.header.run
    interrupt = state.interrupts.get(str(data.get("interrupt_id")))
    if state.header.kind != "run" or not run or interrupt is None or interrupt.status == "open" \
            or interrupt.generation != data.get("generation", interrupt.generation):
        return []
    if run.get("deliver") == "all":
        batch = [state.interrupts[i] for i in run.get("batch") or [] if i in state.interrupts]
        if interrupt not in batch or any(i.status == "open" for i in batch):
            return []
        closed = batch
    else:
        closed = [interrupt]
    key = "run#" + digest(sorted((i.interrupt_id, i.generation) for i in closed))[:32]
    return [(key, body(state, closed, key))]


def body(state: SessionState, closed: list[Interrupt], key: str) -> JsonObject:
    """A delivery: the run, each answer as `interrupt.resumed` carries it (the person's payload, the
    verdict, who, by which channel, the quorum's answers), the action each approved, and the state."""
    h, run = state.header, state.header.run or {}
    answers: list[JsonValue] = [{"interrupt_id": i.interrupt_id, "reason": i.reason,
                                 "action": i.action.to_item() if i.action else None,
                                 **approvals.resumed(i)} for i in closed]
    out = RunDelivery.model_validate({
        "delivery_id": derive("dlv", h.tenant, h.session_id, key), "type": "run.answers", "tenant": h.tenant,
        "agent_id": h.agent_id, "run_id": run.get("id"), "session_id": h.session_id, "answers": answers,
        "state": run.get("state")})
    return out.model_dump(mode="json", by_alias=True)
