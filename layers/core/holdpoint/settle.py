"""Settling a deferred or client tool call from outside the worker (SPEC §4)."""

from __future__ import annotations

from typing import Any

from .auth import Caller
from .calls import settle_tool
from .errors import ApiError
from .models import SettleBody
from .queue import WorkQueue
from .session import SessionState
from .sessions import COMMIT_RETRIES, owned
from .store import Conflict, Store


def settle(store: Store, queue: WorkQueue, caller: Caller, session_id: str, body: SettleBody) -> dict[str, Any]:
    """Record the outcome on the call (its follow-on is held if the branch is parked, R10)."""
    for _ in range(COMMIT_RETRIES):
        state: SessionState = owned(store, caller, session_id)
        call = state.calls.get(body.id)
        if call is None or call.kind != "tool_call":
            raise ApiError(404, "not_found", f"call {body.id} not found", "id")
        if call.status != "open" or (body.attempt is not None and body.attempt != call.attempt):
            attempt = body.attempt or call.attempt
            raise ApiError(409, "call_not_open", f"call {body.id} is not open for attempt {attempt}", "id")
        if body.type == "tool.result":
            settle_tool(state, call, ok=True, result=body.result)
        else:
            settle_tool(state, call, ok=False, error=body.error if body.error is not None else "error")
        try:
            store.commit(state)
        except Conflict:
            continue
        queue.kick(caller.tenant, session_id, state.header.version)
        return {"ok": True, "id": body.id}
    raise ApiError(409, "conflict", "the session is changing too fast; retry")
