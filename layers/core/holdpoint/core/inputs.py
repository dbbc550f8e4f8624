"""Client inputs applied to a session (PROTOCOL.md §4, R9, R11). Pure: raises Refusal to refuse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from holdpoint.core import interrupts as rules
from holdpoint.core.errors import DeclarationError, Refusal, ViewConflict
from holdpoint.core.expiry import Declared
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.policy import Policy
from holdpoint.core.protocols.client import ClientActionInput, ClientMessageInput, ClientMessagesInput
from holdpoint.core.state import Effect, SessionState, derive, mint
from holdpoint.core.turns import add_user_input, dispatch, start_turn

if TYPE_CHECKING:
    from holdpoint.core.agent_config import AgentConfig


@dataclass
class Accepted:
    session_id: str
    turn_id: str | None
    queued: bool = False
    known: bool = False


def refuse_if_parked(state: SessionState, fork_id: str | None) -> None:
    """R9: new messages extending a parked branch are refused, recording nothing."""
    held = rules.parking(state, fork_id)  # global interrupts park every branch, the empty one too
    if held:
        ids = [i.interrupt_id for i in held]
        raise Refusal("interrupted", f"the branch is parked by open interrupt(s): {', '.join(ids)}",
                       interrupt_ids=[*ids])


def _refuse_if_turn_active(state: SessionState) -> None:
    active = state.header.active_turn
    if active:
        raise Refusal("turn_already_active", f"turn {active} is still running", turn_id=active)
    if state.header.turn_queue:
        queued = state.header.turn_queue[0]
        raise Refusal("turn_already_active", f"turn {queued} is queued to run next", turn_id=queued)


def start_session(state: SessionState, agent: AgentConfig) -> None:
    """First input of a session: the config in force, and `session.start` first in the queue."""
    state.header.agent = agent
    state.emit("session.created", agent_id=state.header.agent_id)
    state.enqueue({"type": "session.start"}, anchor=None, turn_id=None, key=("session.start",))


def _known_turn(state: SessionState, turn_id: str | None) -> Accepted | None:
    if turn_id and turn_id in state.turns:
        return Accepted(state.header.session_id, turn_id, known=True)
    return None


def accept_turn(state: SessionState, inp: ClientMessageInput | ClientActionInput,
                requester: str | None = None, digest: str | None = None) -> Accepted:
    """`client.message` (one message at the head) or `client.action`: a new turn, queued if asked."""
    known = _known_turn(state, inp.turn_id)
    if known:
        return known
    refuse_if_parked(state, state.tree.head_id)
    turn_id = inp.turn_id or mint("turn")
    if isinstance(inp, ClientMessageInput):
        message = inp.message.wire()
        message["id"] = message.get("id") or derive("msg", state.header.session_id, turn_id, 0)
        if message["id"] in state.tree.nodes:
            raise Refusal("validation_error", f"message id {message['id']!r} already exists", param="message.id")
        payload: JsonObject = {"type": "client.message", "message": message}
    else:
        payload = {"type": "client.action", "name": inp.name, "args": inp.args}
    if state.header.active_turn or state.header.turn_queue:
        if not inp.queue:
            _refuse_if_turn_active(state)
        start_turn(state, turn_id, queued_input=payload, requester=requester, digest=digest)
        return Accepted(state.header.session_id, turn_id, queued=True)
    start_turn(state, turn_id, requester=requester, digest=digest)
    add_user_input(state, turn_id, payload)
    return Accepted(state.header.session_id, turn_id)


def accept_view(state: SessionState, inp: ClientMessagesInput, requester: str | None = None,
                digest: str | None = None) -> Accepted:
    """`client.messages`: the client's full view, merged by id from the root (R11)."""
    known = _known_turn(state, inp.turn_id)
    if known:
        return known
    turn_id = inp.turn_id or mint("turn")
    view = [m.wire() for m in inp.messages]
    try:
        merge = state.tree.merge_view(view, lambda i: derive("msg", state.header.session_id, turn_id, i))
    except ViewConflict as exc:
        raise Refusal("invalid_request", str(exc), param=f"messages[{exc.index}].id") from exc
    old_head = state.tree.head_id
    if not merge.new_nodes:
        state.move_head(merge.head_id)
        rules.void_llm_calls_off_path(state, old_head)
        return Accepted(state.header.session_id, None)
    refuse_if_parked(state, merge.fork_id)
    forks_away = old_head is not None and not (
        merge.fork_id is not None and state.tree.is_ancestor_or_self(old_head, merge.fork_id)
    )
    if forks_away:
        _suspend_active_turn(state)
    else:
        _refuse_if_turn_active(state)
    for node in merge.new_nodes:
        state.add_node(node.id, node.parent_id, node.message)
        state.emit("message.added", message_id=node.id, role=node.message.get("role"))
    if state.tree.head_id != merge.head_id:
        state.move_head(merge.head_id)
    rules.void_llm_calls_off_path(state, old_head)
    start_turn(state, turn_id, requester=requester, digest=digest)
    trigger: JsonObject = {"type": "client.messages", "new_from": merge.new_from or 0}
    if inp.client is not None:
        trigger["client"] = inp.client
    dispatch(state, turn_id, trigger)
    return Accepted(state.header.session_id, turn_id)


def _suspend_active_turn(state: SessionState) -> None:
    """Branching away from a running turn leaves it suspended on its branch (R11)."""
    turn = state.turns.get(state.header.active_turn or "")
    if turn is not None and turn.status == "running":
        turn.status = "suspended"
        state.touch(turn)
        state.emit("turn.suspended", turn_id=turn.id)
    state.header.active_turn = None


def raise_from_api(state: SessionState, *, reason: str, payload: Any, origin: str, global_: bool,
                   interrupt_id: str | None, expires_in: int | None, request_id: str,
                   response_schema: Any = None, approval: Policy | None = None,
                   declared: Declared | None = None, requester: str | None = None) -> str:
    """R5: an operator or client pause at the current head (or global when asked), asked for by
    `requester` (the caller's principal); A5: a reminder or escalation that would come after the
    expiry is 400 naming its field."""
    anchor = None if global_ or not state.tree.nodes else state.tree.head_id
    try:
        interrupt = rules.raise_interrupt(
            state, interrupt_id=interrupt_id, reason=reason, payload=payload, origin=origin, anchor=anchor,
            expires_in=expires_in, call_id=None, turn_id=state.header.active_turn, raised_by=f"api:{request_id}",
            response_schema=response_schema, approval=approval, declared=declared, requester=requester)
    except DeclarationError as exc:
        raise Refusal("validation_error", str(exc), exc.field) from None
    if interrupt is None:
        return interrupt_id or ""
    state.effects.append(Effect(kind="kick"))
    return interrupt.interrupt_id
