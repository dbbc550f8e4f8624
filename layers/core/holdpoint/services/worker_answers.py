"""A worker's later answer: `POST /v1/workers/submit` applies the answer to a deferred decision
(PROTOCOL.md §2.9) through the engine's own path, exactly once, under the session's version check."""

from __future__ import annotations

import time
from dataclasses import dataclass

from holdpoint.core.errors import CallHeld, ProtocolError, Refusal
from holdpoint.core.protocols.worker_actions import WorkerSubmitBody
from holdpoint.core.state import SessionState
from holdpoint.ports import Clock, Sessions, WorkQueue
from holdpoint.services.caller import Caller
from holdpoint.services.sessions import changed, owned


@dataclass(frozen=True)
class Submitted:
    """A deferred decision's answer applied, or (`noop`) one applied before."""

    session_id: str
    decision_id: str
    noop: bool


def submit(store: Sessions, queue: WorkQueue, caller: Caller, body: WorkerSubmitBody,
           clock: Clock = time.time) -> Submitted:
    """Apply the answer if its decision is still pending; a repeat of an applied submit is a no-op.
    An answer that breaks the protocol is 400 naming the field, with nothing recorded (a worker
    answering in a response body fails its decision instead: here the worker can fix and resend)."""
    caller.require_machine("submit a worker's answer")
    from holdpoint.core import engine  # the engine's rules load when a worker submits, not on every cold start

    response = body.response()

    def apply(state: SessionState) -> bool:
        try:
            return engine.apply_submit(state, body.decision_id, response, state.now)
        except CallHeld as exc:  # R12: 409 `call_held`, naming the action and the interrupt
            raise Refusal(exc.refusal.code, exc.refusal.message, exc.param, retry_after=exc.refusal.retry_after,
                          **exc.refusal.extra) from None
        except ProtocolError as exc:
            raise Refusal("validation_error", str(exc), exc.param) from None

    state, applied = changed(store, lambda: owned(store, caller, body.session_id), apply, clock)
    if applied:
        queue.kick(caller.tenant, body.session_id, state.header.version)
    return Submitted(body.session_id, body.decision_id, noop=not applied)
