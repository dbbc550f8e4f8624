"""Session operations behind the HTTP API: submit inputs, read views, raise interrupts."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from holdpoint.core import attention, claims, quotas
from holdpoint.core import interrupts as rules
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import PolicyError, QuotaExceeded, Refusal
from holdpoint.core.expiry import Declared
from holdpoint.core.inputs import Accepted, accept_turn, accept_view, raise_from_api, start_session
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.messages import Kick
from holdpoint.core.policy import Policy
from holdpoint.core.protocols.client import ClientActionInput, ClientMessageInput, ClientMessagesInput
from holdpoint.core.state import SessionKind, SessionState, derive, iso_ms, mint
from holdpoint.ports import (
    Clock,
    Directory,
    Sealer,
    SessionFilters,
    SessionRow,
    Sessions,
    SessionsAndAgents,
    Throttled,
    Timers,
    Unavailable,
    WorkQueue,
)
from holdpoint.services.caller import Caller
from holdpoint.services.contention import transact
from holdpoint.services.errors import Contended
from holdpoint.services.resume import open_fields, shown_to

T = TypeVar("T")
Backstop = Callable[[], Timers]
"""The durable timers, built only when a kick needs them (an API container never does otherwise)."""
BACKSTOP_SECS = 1
TurnInput = ClientMessageInput | ClientMessagesInput | ClientActionInput


def owned(store: Sessions, caller: Caller, session_id: str) -> SessionState:
    """Load a session the caller may see; anything else is 404, as if absent (R17)."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found")
    state = store.load(caller.tenant, session_id)
    if state is None or not caller.owns(session_id, state.header.end_user):
        raise Refusal("not_found", f"session {session_id} not found")
    return state


def claim(store: Sessions, caller: Caller, session_id: str, *, agent_id: str, kind: SessionKind,
          chosen: bool, param: str | None = None, creates: bool = True) -> SessionState | None:
    """The one rule for a path that creates a session by id or reuses the session an id names
    (`core.claims`): None when there is none yet (the path creates it), the session when this
    caller may reuse it as a `kind` session of `agent_id`. `chosen`: the caller picked the id (an
    AG-UI `threadId`), so a new one may not have the shape of Holdpoint's own ids, and a session
    there is reused under the usual reach (R17; another's is 404, as if absent). Otherwise the id
    was derived for `caller.principal()`, and what is found there must be that principal's own:
    anything else is 409 naming `param`, and nothing is reused. `creates=False`: a path that only
    looks (AG-UI's connect, an A2A context), where an absent id is the caller's 404 to give."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found", param)
    state = store.load(caller.tenant, session_id)
    if state is None:
        if chosen and creates and claims.reserved(session_id):
            raise Refusal("validation_error", f"{session_id} has the shape of an id Holdpoint makes (ses_, turn_ "
                          "or int_ and 24 hex digits), which a caller may not choose for a new session; "
                          "choose another", param)
        return None
    if not caller.owns(session_id, state.header.end_user):
        raise Refusal("not_found", f"session {session_id} not found", param)
    why = claims.reuse_refusal(state.header, agent_id=agent_id, kind=kind,
                               principal=None if chosen else caller.principal())
    if why is not None:
        if chosen:
            raise Refusal("not_found", f"session {session_id} not found for agent {agent_id}", param)
        raise Refusal("conflict", f"the session this request derives cannot be used: {why}", param)
    return state


def chosen_turn(state: SessionState, turn_id: str | None) -> None:
    """A `turn_id` a caller names (or an AG-UI `runId`, an A2A `messageId`) that does not exist
    yet may not have the shape of Holdpoint's own ids: those of other principals' keyed inputs are
    derived, and so predictable (`core.claims`)."""
    if turn_id is not None and turn_id not in state.turns and claims.reserved(turn_id):
        raise Refusal("validation_error", f"{turn_id} has the shape of an id Holdpoint makes (turn_ and 24 hex "
                      "digits), which a caller may not choose; choose another", "turn_id")


def changed(store: Sessions, load: Callable[[], SessionState], mutate: Callable[[SessionState], T],
            clock: Clock, *, retry: bool = True) -> tuple[SessionState, T]:
    """`contention.transact`, with losing every round answered as 409 `conflict`, and a quota that
    refuses the commit as 429 `quota_exceeded` (nothing was written)."""
    try:
        return transact(store, load, mutate, clock=clock, retry=retry)
    except Contended as exc:
        raise Refusal("conflict", f"{exc}; retry") from None
    except QuotaExceeded as exc:
        raise exc.refusal() from None


def submit(store: SessionsAndAgents, queue: WorkQueue, caller: Caller, session_id: str | None,
           inp: TurnInput, clock: Clock = time.time, new_session_id: str | None = None,
           idempotency_key: str | None = None, backstop: Backstop | None = None,
           derived_turn: bool = False) -> Accepted:
    """Apply a client input with a conditional commit; retried on a concurrent change. A new
    session gets a minted id, `new_session_id` (an AG-UI thread names its session), or one
    derived from the caller's `idempotency_key`, which also names the turn when the input does
    not: the retry of a request answered 503 finds what the first one recorded (`known`).
    `backstop` gives the timers a refused kick falls back on (`kick`). A `turn_id` the caller
    chose may not have the shape of Holdpoint's own ids (`chosen_turn`) unless Holdpoint itself
    derived it (`derived_turn`: the engine's `message.send`)."""
    chosen = None if derived_turn else inp.turn_id
    digest = None
    if idempotency_key is not None:
        inp, digest = keyed(caller, session_id, inp, idempotency_key)
    if session_id is None:
        caller.require_unbound()
        sid = new_session_id or (derive("ses", caller.tenant, caller.principal(), idempotency_key)
                                 if idempotency_key is not None else mint("ses"))
        agent = _agent_for(store, caller, inp)
        identity = caller.identity()

        def load() -> SessionState:
            made = claim(store, caller, sid, agent_id=inp.agent_id or "", kind="conversation",
                         chosen=new_session_id is not None,
                         param="threadId" if new_session_id is not None else "Idempotency-Key")
            if made is not None:
                return made if new_session_id is not None else _made_by_key(made, inp)
            state = SessionState.new(caller.tenant, sid, inp.agent_id or "", now=clock(), identity=identity,
                                     end_user=caller.owner())
            start_session(state, agent)
            return state
    else:
        sid = session_id

        def load() -> SessionState:
            return owned(store, caller, sid)

    def accept(state: SessionState) -> Accepted:
        if state.header.kind != "conversation":
            raise Refusal("invalid_request", f"session {sid} holds MCP approvals and takes no input")
        chosen_turn(state, chosen)
        _same_request(state, inp.turn_id, digest)
        if isinstance(inp, ClientMessagesInput):
            return accept_view(state, inp, requester=caller.principal(), digest=digest)
        return accept_turn(state, inp, requester=caller.principal(), digest=digest)

    state, accepted = changed(store, load, accept, clock,
                              retry=session_id is not None or idempotency_key is not None)
    if state.effects or accepted.known:
        # A known input is a retry: its first kick may have been refused after the commit, so it
        # is sent again (at the same version the FIFO deduplicates it; later, it is a no-op step).
        kick(queue, backstop, caller.tenant, sid, state.header.version)
    return accepted


def kick(queue: WorkQueue, backstop: Backstop | None, tenant: str, session_id: str, version: int) -> None:
    """Tell the engine a committed input is due. A kick the queue refuses (past its client's
    attempts) is set as a one-time timer instead, so the input runs a moment later though the
    client never resends: the timer is named by the version, so asking twice is one timer, and it
    costs nothing unless the queue refused. Only a refusal of both is the caller's 503."""
    try:
        queue.kick(tenant, session_id, version)
    except (Throttled, Unavailable):
        if backstop is None:
            raise
        backstop().schedule(BACKSTOP_SECS, Kick(tenant, session_id), f"kick/{version}")


def keyed(caller: Caller, session_id: str | None, inp: TurnInput, key: str) -> tuple[TurnInput, str]:
    """The input with the turn id the caller's idempotency key derives, unless it names one, and
    the digest of the request the key stands for (its body as checked, so a resend that differs
    only in spacing or key order is the same request)."""
    digest = request_digest(inp)
    if inp.turn_id is not None:
        return inp, digest
    return inp.model_copy(update={"turn_id": derive("turn", caller.tenant, caller.principal(), session_id, key)}
                          ), digest


def request_digest(inp: TurnInput) -> str:
    body = json.dumps(inp.model_dump(mode="json", exclude_none=True), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def _same_request(state: SessionState, turn_id: str | None, digest: str | None) -> None:
    """A key resent with another body is refused (409), as Stripe's API does: the first request's
    turn records the digest of its body, and only the same body finds it again."""
    turn = state.turns.get(turn_id or "")
    if digest is not None and turn is not None and turn.digest is not None and turn.digest != digest:
        raise Refusal("conflict", "this Idempotency-Key was used with a different request body; send the same "
                      "body to retry it, or a new key for a new request", param="Idempotency-Key")


def _made_by_key(state: SessionState, inp: Any) -> SessionState:
    """The session an earlier request with this idempotency key made (the key is the caller's:
    the id derives from its principal): its retry finds its turn; another request reusing the key
    is refused (409) rather than added to that session."""
    if inp.turn_id not in state.turns:
        raise Refusal("conflict", "this Idempotency-Key was used for another request", param="Idempotency-Key")
    return state


def _agent_for(store: Directory, caller: Caller, inp: Any) -> AgentConfig:
    """The declared config a new session starts with (400 naming `agent_id` if there is none)."""
    if not inp.agent_id:
        raise Refusal("invalid_request", "agent_id is required to start a session", param="agent_id")
    agent = store.get_agent(caller.tenant, inp.agent_id)
    if agent is None:
        raise Refusal("not_found", f"agent {inp.agent_id} not found", param="agent_id")
    return AgentConfig.from_item(agent)


def view(store: Sessions, caller: Caller, session_id: str) -> dict[str, Any]:
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
        "interrupts": [shown_to(caller, {**i.view(), **open_fields(caller, i)}) for i in state.open_interrupts()],
        "parked_by": [i.interrupt_id for i in rules.active_parking(state)],
        "messages": [n.message for n in state.tree.active_path()],
        "message_tree": state.tree.wire(),
        "calls": [c.wire() for c in state.open_calls()],
        "retrying": retrying(state, caller),
        "usage": h.usage,
        "state": h.state,
        "agent": agent_shown(caller, h.agent),
        "created_at": h.created_at,
        "version": h.version,
    }


CLIENT_AGENT_FIELDS = ("name", "description")
"""What an end user's views show of each of the agent's tools: what a client UI needs, nothing more."""
END_USER_RETRYING = "the agent's worker is not answering; the operators can see why"


def agent_shown(caller: Caller, agent: AgentConfig | None) -> JsonObject | None:
    """The agent config as a caller's views show it: whole to the tenant's API keys (who may read
    it, `GET /v1/agents`), and to an end user or a person signed in through the identity provider
    (neither may read agents) only its tools' names and descriptions. The config holds the system
    prompt, the worker's address, the notify channels' capability URLs, secret references and the
    approver policy, none of them theirs to read."""
    if agent is None:
        return None
    if not caller.own_only and not caller.person:
        return agent.to_item()
    tools: list[JsonValue] = [{k: getattr(t, k) for k in CLIENT_AGENT_FIELDS if isinstance(getattr(t, k), str)}
                              for t in agent.tools]
    return {"tools": tools}


def retrying(state: SessionState, caller: Caller) -> dict[str, Any] | None:
    """The delivery the session waits to retry, and why the last one failed (a worker that is
    down, a secret that is not set), so a stuck `running` says what it is waiting for. An end
    user is told that it waits, not why: the reason can name a secret reference or an address."""
    for decision in state.pending_decisions():
        if decision.last_error and decision.attempts:
            return {"decision_id": decision.id, "attempt": decision.attempts,
                    "reason": END_USER_RETRYING if caller.own_only else decision.last_error,
                    "next_at": iso_ms(decision.not_before) if decision.not_before else None}
    return None


def events(store: Sessions, caller: Caller, session_id: str, after_seq: int, limit: int) -> dict[str, Any]:
    owned(store, caller, session_id)
    items = store.events(caller.tenant, session_id, after_seq, limit)
    next_after = items[-1].seq if items else after_seq
    return {"events": [e.wire() for e in items], "next_after_seq": next_after, "has_more": len(items) == limit}


@dataclass(frozen=True)
class Raised:
    """An interrupt raised through the API (or, `noop`, the same raise again), as it now stands."""

    interrupt_id: str
    noop: bool
    interrupt: dict[str, Any] | None


def raise_interrupt(store: Sessions, queue: WorkQueue, caller: Caller, session_id: str, *, reason: str,
                    payload: Any, global_: bool, interrupt_id: str | None, expires_in: int | None,
                    request_id: str, response_schema: Any = None, approval: Policy | None = None,
                    declared: Declared | None = None, clock: Clock = time.time,
                    backstop: Backstop | None = None, agent: AgentConfig | None = None) -> Raised:
    """R5: an interrupt raised through the API, at the head (or global), with the caller's origin
    and principal as its requester (`agent`: the config an approvals session raises under, read
    at this raise, so a re-declared agent's policy and notify apply to it);
    A1: `response_schema` (already checked by the wire model) bounds what its resume may carry;
    A2: `approval` narrows the policy in force (400 naming the field where it would widen it);
    A5: `declared` is its expiry outcome, reminders and escalation."""
    def raise_it(state: SessionState) -> str:
        try:
            if agent is not None:  # an approvals session raises under the agent as declared now
                state.header.agent = agent
            if interrupt_id not in state.interrupts and claims.reserved(interrupt_id):
                raise Refusal("validation_error", f"{interrupt_id} has the shape of an id Holdpoint makes (int_ "
                              "and 24 hex digits), which a caller may not choose; choose another", "interrupt_id")
            seconds = expires_in
            if seconds is None and caller.own_only and not state.header.config().interrupt_expires_in:
                seconds = quotas.END_USER_RAISE_EXPIRES_IN  # an abandoned one frees its slot of her share
            return raise_from_api(state, reason=reason, payload=payload, origin=caller.origin, global_=global_,
                                  interrupt_id=interrupt_id, expires_in=seconds, request_id=request_id,
                                  response_schema=response_schema, approval=approval, declared=declared,
                                  requester=caller.principal())
        except PolicyError as exc:
            raise Refusal("validation_error", str(exc), param=exc.at("approval")) from None

    state, iid = changed(store, lambda: owned(store, caller, session_id), raise_it, clock)
    if state.effects:
        kick(queue, backstop, caller.tenant, session_id, state.header.version)
    interrupt = state.interrupts.get(iid)
    return Raised(iid, noop=not state.effects, interrupt=interrupt.view() if interrupt else None)


def opened_cursor(sealer: Sealer, purpose: str, caller: Caller, cursor: str | None) -> str | None:
    """Where a paged read resumes: a cursor sealed under the deployment's key and bound to the
    tenant (opaque, and refused naming `cursor` if altered, expired or another tenant's)."""
    if not cursor:
        return None
    sealed = sealer.unseal(purpose, cursor)
    at = sealed.get("at") if sealed is not None else None
    if sealed is None or sealed.get("tenant") != caller.tenant or not isinstance(at, str):
        raise Refusal("validation_error", "cursor is not valid", "cursor")
    return at


def sealed_cursor(sealer: Sealer, purpose: str, caller: Caller, at: str | None) -> str | None:
    return sealer.seal(purpose, {"tenant": caller.tenant, "at": at}) if at else None


def listing(store: Sessions, sealer: Sealer, caller: Caller, limit: int, cursor: str | None,
            filters: SessionFilters) -> dict[str, Any]:
    """The tenant's sessions, newest first (`GET /v1/sessions`). A client token lists only the
    sessions its subject started (the filter is applied in the query, so pages stay full), and a
    token bound to one session only that one."""
    if caller.owner() is not None:
        filters = replace(filters, end_user=caller.subject)
    purpose = "sessions-cursor:attention" if filters.attention else "sessions-cursor"  # another index's keys
    rows, last = store.sessions(caller.tenant, limit, opened_cursor(sealer, purpose, caller, cursor), filters)
    if caller.session_id:
        rows = [r for r in rows if r.session_id == caller.session_id]
    return {"sessions": [_row(caller, r) for r in rows], "next_cursor": sealed_cursor(sealer, purpose, caller, last)}


def _row(caller: Caller, row: SessionRow) -> dict[str, Any]:
    """A listing row; one that needs attention says what to do about it. An end user is told that
    it waits, not why: the reason can name the worker's secret reference or its address."""
    out = row.wire()
    if row.attention is None:
        return out
    reason = str(row.attention.get("reason") or "")
    if caller.own_only:
        out["attention"] = {"kind": row.attention.get("kind"), "since": row.attention.get("since"),
                            "reason": END_USER_RETRYING}
    else:
        out["attention"] = {**row.attention, "advice": attention.advice(reason)}
    return out
