"""The effects of a step that reach other sessions of the tenant: a sub-agent's child session
created and started (once: its id derives from the parent's call), its result handed back to the
parent, a `message.send` queued into another session; and whether a child waits on a person."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from holdpoint.core import claims, subagents
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.inputs import start_session
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.core.state import Effect, SessionState, derive
from holdpoint.core.turns import add_user_input, start_turn
from holdpoint.ports import Conflict, WorkQueue
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.contention import Transact
from holdpoint.services.step import Step

log = Logger(child=True)


@dataclass(kw_only=True)
class Children(Step):
    """The cross-session effects of one engine, over its ports as they are now (`Runner.children`)."""

    queue: WorkQueue
    transact: Transact

    def spawn(self, parent: SessionState, effect: Effect) -> None:
        """Create the child session (once: its id is derived from the parent's call) and start it."""
        data = effect.data or {}
        h = parent.header
        child_id = data["session_id"]
        parent_ref = {"session_id": h.session_id, "call_id": data["call_id"]}
        found = self.store.load(h.tenant, child_id)
        why = claims.reuse_refusal(found.header, agent_id=data["agent_id"], kind="conversation",
                                   principal=claims.principal_of(h), parent=parent_ref) if found else None
        if why is not None:  # an id the worker chose names a session that is not this call's child
            self.transact(h.tenant, h.session_id, lambda s: subagents.apply_child_result(
                s, data["call_id"], False, None, {"code": "session_taken", "session_id": child_id,
                                                  "message": f"session {child_id} cannot be this call's child: {why}"}))
            return
        if found is None:
            agent = self.store.get_agent(h.tenant, data["agent_id"])
            if agent is None:
                self.transact(h.tenant, h.session_id, lambda s: subagents.apply_child_result(
                    s, data["call_id"], False, None, {"code": "agent_not_found", "agent_id": data["agent_id"]}))
                return
            child = SessionState.new(h.tenant, child_id, data["agent_id"], now=self.clock(), identity=h.identity,
                                     end_user=h.end_user,
                                     ancestry=data["ancestry"],
                                     parent=parent_ref)
            start_session(child, AgentConfig.from_item(agent))
            turn_id = derive("turn", child_id, "first")
            start_turn(child, turn_id)
            message = {**data["message"], "id": derive("msg", child_id, "task")}
            add_user_input(child, turn_id, {"type": "client.message", "message": message})
            with contextlib.suppress(Conflict):  # created by an earlier try of this step
                self.store.commit(child)
        self.queue.kick(h.tenant, child_id, 0)

    def child_status(self, state: SessionState | None, call_id: str) -> tuple[bool, int | None]:
        """For a sub_agent call: whether its child waits on a person, and the child's version."""
        call = state.calls.get(call_id) if state is not None else None
        if state is None or call is None or call.kind != "sub_agent" or not call.child_session_id:
            return False, None
        child = self.store.load(state.header.tenant, call.child_session_id)
        if child is None:
            return False, None
        return self._waiting(child, 0), child.header.version

    def _waiting(self, session: SessionState, depth: int) -> bool:
        """An open interrupt in the session or, 8 levels down, in a sub-agent it waits on."""
        if session.open_interrupts():
            return True
        if depth >= 8:
            return False
        for call in session.open_calls():
            child = self.store.load(session.header.tenant, call.child_session_id) \
                if call.kind == "sub_agent" and call.child_session_id else None
            if child is not None and self._waiting(child, depth + 1):
                return True
        return False

    def notify_parent(self, child: SessionState, effect: Effect) -> None:
        data = effect.data or {}
        parent = child.header.parent or {}
        tenant = child.header.tenant
        try:
            state, _ = self.transact(tenant, parent["session_id"], lambda s: subagents.apply_child_result(
                s, parent["call_id"], bool(data.get("ok")), data.get("result"), data.get("error"),
                child.header.session_id))
        except LookupError:
            log.warning("parent session is gone", extra={"session_id": child.header.session_id})
            return
        self.queue.kick(tenant, parent["session_id"], state.header.version)

    def send(self, state: SessionState, effect: Effect) -> None:
        """`message.send`: a queued client message into another session of the same tenant."""
        data = effect.data or {}
        who = Caller(state.header.tenant, f"session:{state.header.session_id}", "machine")
        inp = ClientMessageInput(type="client.message", message=data["message"], queue=True,
                                 turn_id=derive("turn", state.header.session_id, data.get("key")))
        try:
            sessions.submit(self.store, self.queue, who, data["session_id"], inp, clock=self.clock, derived_turn=True)
        except Refusal as exc:
            log.warning("message.send refused: %s", exc.message, extra={"session_id": state.header.session_id})
