"""Session operations behind the HTTP API: submit inputs, read views, raise interrupts."""

from __future__ import annotations

import base64
import json
from typing import Any

from . import interrupts as rules
from .auth import Caller
from .contention import ATTEMPTS, pause
from .errors import ApiError
from .inputs import Accepted, accept_turn, accept_view, raise_from_api, start_session
from .models import ClientActionInput, ClientMessageInput, ClientMessagesInput
from .queue import WorkQueue
from .session import SessionState, mint
from .store import Conflict, Store


def owned(store: Store, caller: Caller, session_id: str) -> SessionState:
    """Load a session the caller may see; anything else is 404, as if absent (R17)."""
    if caller.session_id and caller.session_id != session_id:
        raise ApiError(404, "not_found", f"session {session_id} not found")
    state = store.load(caller.tenant, session_id)
    if state is None or (caller.own_only and (state.header.identity or {}).get("id") != caller.subject):
        raise ApiError(404, "not_found", f"session {session_id} not found")
    return state


def submit(store: Store, queue: WorkQueue, caller: Caller, session_id: str | None,
           inp: ClientMessageInput | ClientMessagesInput | ClientActionInput) -> Accepted:
    """Apply a client input with a conditional commit; retried on a concurrent change."""
    creating = session_id is None
    sid = session_id or mint("ses")
    agent: dict[str, Any] | None = None
    for attempt in range(ATTEMPTS):
        state = None if creating else owned(store, caller, sid)
        if state is None:
            if not inp.agent_id:
                raise ApiError(400, "invalid_request", "agent_id is required to start a session", param="agent_id")
            agent = agent or store.get_agent(caller.tenant, inp.agent_id)
            if agent is None:
                raise ApiError(404, "not_found", f"agent {inp.agent_id} not found", param="agent_id")
            state = SessionState.new(caller.tenant, sid, inp.agent_id,
                                     identity={"id": caller.subject, "metadata": {"origin": caller.origin}})
            start_session(state, agent)
        if isinstance(inp, ClientMessagesInput):
            accepted = accept_view(state, inp)
        else:
            accepted = accept_turn(state, inp)
        try:
            store.commit(state)
        except Conflict:
            if creating:
                raise ApiError(409, "conflict", "session was created concurrently") from None
            pause(attempt)
            continue
        if state.effects:
            queue.kick(caller.tenant, sid, state.header.version)
        return accepted
    raise ApiError(409, "conflict", "the session is changing too fast; retry")


def view(store: Store, caller: Caller, session_id: str) -> dict[str, Any]:
    state = owned(store, caller, session_id)
    h = state.header
    last = state.turns.get(h.last_turn or "")
    return {
        "session_id": h.session_id,
        "agent_id": h.agent_id,
        "status": rules.status(state),
        "head_id": state.tree.head_id,
        "turn_id": h.active_turn,
        "last_turn": {"turn_id": last.id, "status": last.status, "data": last.data, "error": last.error}
        if last else None,
        "interrupts": [i.view() for i in state.open_interrupts()],
        "parked_by": [i.interrupt_id for i in rules.active_parking(state)],
        "messages": [n.message for n in state.tree.active_path()],
        "message_tree": state.tree.wire(),
        "calls": [c.wire() for c in state.open_calls()],
        "usage": h.usage,
        "state": h.state,
        "agent": h.agent,
        "created_at": h.created_at,
        "version": h.version,
    }


def events(store: Store, caller: Caller, session_id: str, after_seq: int, limit: int) -> dict[str, Any]:
    owned(store, caller, session_id)
    items = store.events(caller.tenant, session_id, after_seq, limit)
    next_after = items[-1]["seq"] if items else after_seq
    return {"events": items, "next_after_seq": next_after, "has_more": len(items) == limit}


def raise_interrupt(store: Store, queue: WorkQueue, caller: Caller, session_id: str, *, reason: str,
                    payload: Any, global_: bool, interrupt_id: str | None, expires_in: int | None,
                    request_id: str) -> dict[str, Any]:
    for attempt in range(ATTEMPTS):
        state = owned(store, caller, session_id)
        iid = raise_from_api(state, reason=reason, payload=payload, origin=caller.origin, global_=global_,
                             interrupt_id=interrupt_id, expires_in=expires_in, request_id=request_id)
        try:
            store.commit(state)
        except Conflict:
            pause(attempt)
            continue
        if state.effects:
            queue.kick(caller.tenant, session_id, state.header.version)
        interrupt = state.interrupts.get(iid)
        return {"ok": True, "interrupt_id": iid, "noop": not state.effects,
                "interrupt": interrupt.view() if interrupt else None}
    raise ApiError(409, "conflict", "the session is changing too fast; retry")


def inbox(store: Store, caller: Caller, limit: int, cursor: str | None) -> dict[str, Any]:
    """The tenant's open interrupts across sessions, newest first, from the sparse GSI."""
    start = None
    if cursor:
        try:
            start = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "validation_error", "cursor is not valid", "cursor") from None
        if not isinstance(start, dict) or not str(start.get("GSI1PK", {}).get("S", "")).startswith(
                f"T#{caller.tenant}#"):
            raise ApiError(400, "validation_error", "cursor is not valid", "cursor")
    items, last = store.inbox(caller.tenant, limit, start)
    if caller.session_id:
        items = [i for i in items if i["session_id"] == caller.session_id]
    if caller.own_only:
        items = [i for i in items if i.get("owner") == caller.subject]
    next_cursor = base64.urlsafe_b64encode(json.dumps(last).encode()).decode() if last else None
    return {"interrupts": items, "next_cursor": next_cursor}
