"""External runs (PROTOCOL.md §10): `POST /v1/runs/{run_id}/interrupts` raises a run's interrupts
in its own session, `GET /v1/runs/{run_id}` reads them, and the notifier delivers their answers to
the run's target (`Deliveries.starts`, through the delivery path every notification takes)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from holdpoint.bridges.runs import translation as runs
from holdpoint.core import approvals, claims, notify, retry
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import DeclarationError, PolicyError, Refusal
from holdpoint.core.expiry import Declared
from holdpoint.core.inputs import start_session
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.protocols.approval import policy_of
from holdpoint.core.protocols.client import RunInterruptsBody
from holdpoint.core.state import SessionState, derive
from holdpoint.ports import Clock, DeliveryRecord, PushStarts, Sessions, SessionsAndAgents, WorkQueue
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.resume import open_fields, shown_to
from holdpoint.services.sessions import Backstop


def session_id_of(caller: Caller, run_id: str) -> str:
    """A run's session: derived from the caller's principal, so a run id is the caller's own (an
    id another principal names is another session), the same on every request."""
    return derive("ses", "run", caller.tenant, caller.principal(), run_id)


def _target(agent: AgentConfig, body: RunInterruptsBody) -> JsonObject | None:
    """The declared target the request names, and the callback its kind needs (400 naming the field);
    None when the run reads its own answers (and so may not ask for a wait to be completed)."""
    if body.target is None:
        if body.callback is not None:
            raise Refusal("validation_error", "a callback is completed by a step_functions or durable_function "
                          "target: name one of the agent's `run_targets` in `target`", "target")
        return None
    declared = (agent.run_targets or {}).get(body.target)
    if declared is None:
        raise Refusal("validation_error", f"agent {body.agent_id} declares no run target {body.target!r} "
                      "(`run_targets` on the agent)", "target")
    target = declared.wire()
    kind = runs.target_kind(target)
    needs = runs.CALLBACK_KINDS.get(kind or "")
    if needs is not None and not getattr(body.callback, needs, None):
        raise Refusal("validation_error", f"a {kind} target completes the run's own wait: give callback.{needs}",
                      f"callback.{needs}")
    if needs is not None and body.deliver == "each":
        raise Refusal("validation_error", f"a {kind} target completes one wait, once: its answers go all together "
                      "(leave `deliver` out, or give \"all\")", "deliver")
    return target


def _deliver(target: JsonObject | None) -> runs.Deliver:
    """How answers go when the request does not say: all together to a wait, else each as it closes."""
    return "all" if target is not None and runs.target_kind(target) in runs.CALLBACK_KINDS else "each"


def _state_size(body: RunInterruptsBody) -> None:
    size = len(json.dumps(body.state, separators=(",", ":")))
    if size > runs.MAX_STATE_BYTES:
        raise Refusal("payload_too_large", f"a run's state is at most {runs.MAX_STATE_BYTES} bytes of JSON, this "
                      f"one {size}", "state")


def _asked(body: RunInterruptsBody) -> list[runs.RunInterrupt]:
    return [runs.RunInterrupt(
        interrupt_id=i.interrupt_id, reason=i.reason, payload=i.payload, response_schema=i.declared_schema(),
        approval=policy_of(i.approval), expires_in=i.expires_in, declared=Declared.of(i),
        tool=i.action.tool if i.action else None,
        arguments=json.dumps(i.action.arguments) if i.action and i.action.arguments is not None else None)
        for i in body.interrupts]


def raise_run(store: SessionsAndAgents, queue: WorkQueue, caller: Caller, run_id: str, body: RunInterruptsBody,
              clock: Clock = time.time, backstop: Backstop | None = None) -> JsonObject:
    """Raise a run's interrupts (each parked as any other), in the run's session, created on first
    use; a retried request raises nothing twice. The session keeps the run's target, how it wants
    its answers (`deliver`), the opaque `state` and the callback to complete."""
    caller.require_unbound()
    declaration = store.get_agent(caller.tenant, body.agent_id)
    if declaration is None:
        raise Refusal("not_found", f"agent {body.agent_id} not found", "agent_id")
    agent = AgentConfig.from_item(declaration)
    target = _target(agent, body)
    deliver = body.deliver or _deliver(target)
    _state_size(body)
    sid = session_id_of(caller, run_id)
    callback = body.callback.model_dump(exclude_none=True) if body.callback else None

    def load() -> SessionState:
        found = sessions.claim(store, caller, sid, agent_id=body.agent_id, kind="run", chosen=False, param="run_id")
        if found is not None:
            found.header.agent = agent  # a run raises under the agent as declared now (as MCP's approvals do)
            return found
        state = SessionState.new(caller.tenant, sid, body.agent_id, now=clock(), identity=caller.identity(),
                                 end_user=caller.owner(), kind="run")
        start_session(state, agent)
        return state

    def mutate(state: SessionState) -> list[str]:
        runs.open_run(state, run_id, body.target, deliver, body.state, callback)
        try:
            return runs.raise_all(state, _asked(body), origin=caller.origin, requester=caller.principal())
        except PolicyError as exc:
            raise Refusal("validation_error", str(exc), exc.at("interrupts.approval")) from None
        except DeclarationError as exc:
            raise Refusal("validation_error", str(exc), f"interrupts.{exc.field}") from None

    state, ids = sessions.changed(store, load, mutate, clock)
    if state.effects:
        sessions.kick(queue, backstop, caller.tenant, sid, state.header.version)
    return run_view(caller, state, run_id, ids)


def run_view(caller: Caller, state: SessionState, run_id: str, ids: list[str] | None = None) -> JsonObject:
    """A run as its caller reads it: its session, target and how answers go, and each interrupt
    (open ones as the inbox shows them, closed ones with their answer and verdict)."""
    run = state.header.run or {}
    chosen = ids if ids is not None else list(state.interrupts)
    items: list[JsonValue] = []
    for iid in chosen:
        interrupt = state.interrupts.get(iid)
        if interrupt is None:
            continue
        item = {**interrupt.view(), "status": interrupt.status}
        item.update(open_fields(caller, interrupt) if interrupt.status == "open" else approvals.resumed(interrupt))
        items.append(shown_to(caller, item))
    return {"run_id": run_id, "session_id": state.header.session_id, "agent_id": state.header.agent_id,
            "target": run.get("target"), "deliver": run.get("deliver"), "interrupts": items}


def view(store: Sessions, caller: Caller, run_id: str) -> JsonObject:
    """`GET /v1/runs/{run_id}`: the caller's own run (404 for another's, or none)."""
    sid = session_id_of(caller, run_id)
    state = store.load(caller.tenant, sid)
    if state is None or not caller.owns(sid, state.header.end_user) or claims.reuse_refusal(
            state.header, agent_id=state.header.agent_id, kind="run", principal=caller.principal()) is not None:
        raise Refusal("not_found", f"run {run_id} not found", "run_id")
    return run_view(caller, state, run_id)


class RunDeliveries:
    """A run's answers, through the notifier's delivery path (claim once, retry on a durable timer,
    dead-letter): `starts` gives the records a closing event of a run session starts."""

    def __init__(self, store: Sessions) -> None:
        self.store = store

    def starts(self, tenant: str, session_id: str, event: Mapping[str, object]) -> list[DeliveryRecord]:
        if notify.kind_of(dict(event)) not in notify.CLOSING:
            return []
        state = self.store.load(tenant, session_id, head_only=True)
        if state is None or state.header.kind != "run" or not state.header.run:
            return []
        run = state.header.run
        declared = (state.header.config().run_targets or {}).get(str(run.get("target")))
        data = event.get("data")
        target = declared.wire() if declared is not None else None
        if target is None or not isinstance(data, dict) or runs.target_kind(target) is None:
            return []
        kind = str(runs.target_kind(target))
        entry: dict[str, Any] = {**target, "callback": run.get("callback")}
        policy = retry.policy(state.header.agent, "webhook").fields()
        return [{"key": key, "tenant": tenant, "session_id": session_id, "channel": runs.CHANNELS[kind],
                 "entry": entry, "event": body, "policy": policy} for key, body in runs.deliveries(state, data)]


def chained(*starts: PushStarts) -> PushStarts:
    """The records several starters give one event-log entry (A2A's push configs, a run's answers)."""

    def all_of(tenant: str, session_id: str, event: JsonObject) -> list[DeliveryRecord]:
        return [record for start in starts for record in start(tenant, session_id, event)]

    return all_of
