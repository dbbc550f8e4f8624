"""Turns: the work one client submission starts, until `done`/`fail`; one at a time."""

from __future__ import annotations

from typing import Any

from holdpoint.core import interrupts as rules
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Effect, SessionState, Turn, derive, iso_ms
from holdpoint.core.tree import message_id


def start_turn(state: SessionState, turn_id: str, *, queued_input: JsonObject | None = None,
               requester: str | None = None, digest: str | None = None) -> Turn:
    """Start a turn now, or queue it (with its input) behind the running one; `requester` is the
    principal whose input it is (A2: the policy may forbid it to approve the turn's actions), and
    `digest` that of the request an `Idempotency-Key` named it for."""
    turn = Turn(id=turn_id, order=state.tick(), input=queued_input, created_at=iso_ms(state.now),
                requester=requester, digest=digest)
    if queued_input is not None:
        turn.status = "queued"
        state.put(turn)
        state.header.turn_queue = [*state.header.turn_queue, turn_id]
        state.emit("turn.queued", turn_id=turn_id)
        return turn
    state.put(turn)
    state.header.active_turn = turn_id
    state.emit("turn.started", turn_id=turn_id)
    return turn


def dispatch(state: SessionState, turn_id: str, trigger: JsonObject) -> None:
    """Queue the turn's first decision at the head and wake the engine."""
    state.enqueue(trigger, anchor=state.tree.head_id, turn_id=turn_id, key=("client", turn_id))
    state.effects.append(Effect(kind="kick"))


def add_user_input(state: SessionState, turn_id: str, inp: JsonObject) -> None:
    """Apply a turn's input at the head: a message (client.message) or an action (client.action)."""
    if inp["type"] == "client.action":
        trigger: JsonObject = {"type": "client.action", "name": inp["name"]}
        if inp.get("args") is not None:
            trigger["args"] = inp["args"]
        dispatch(state, turn_id, trigger)
        return
    given = inp["message"]
    if not isinstance(given, dict):  # `accept_turn` and a spawn write an object
        raise TypeError(f"a turn's message is not an object: {given!r}")
    message = dict(given)
    node_id = message_id(message) or derive("msg", state.header.session_id, turn_id, 0)
    state.add_node(node_id, state.tree.head_id, message)
    state.emit("message.added", message_id=node_id, role=message.get("role"))
    dispatch(state, turn_id, {"type": "client.messages", "new_from": len(state.tree.active_path()) - 1})


def finish_turn(state: SessionState, turn_id: str | None, *, ok: bool, data: Any = None, error: Any = None,
                notify: bool = True) -> None:
    """End a turn (never while its branch is parked), tell the worker, start the next queued one."""
    turn = state.turns.get(turn_id or "")
    if turn is None or turn.status not in ("running", "suspended"):
        return
    turn.status = "done" if ok else "failed"
    turn.data = data
    turn.error = error
    state.touch(turn)
    if state.header.active_turn == turn.id:
        state.header.active_turn = None
    state.header.last_turn = turn.id
    if ok:
        state.emit("turn.finished", turn_id=turn.id, data=data)
    else:
        state.emit("turn.failed", turn_id=turn.id, error=error)
    if notify and wants_turn_finished(state):
        state.enqueue({"type": "turn.finished"}, anchor=state.tree.head_id, turn_id=turn.id,
                      key=("turn.finished", turn.id))
    if state.header.parent:
        state.effects.append(Effect(kind="notify_parent", data={"ok": ok, "result": _final_output(state, data),
                                                                  "error": error}))
    start_next_queued(state)


def wants_turn_finished(state: SessionState) -> bool:
    """`turn.finished` is not an upstream trigger: sent only to an agent that opts in with
    `triggers: {"turn.finished": true}` (PROTOCOL.md §2.3)."""
    return (state.header.config().triggers or {}).get("turn.finished") is True


def start_next_queued(state: SessionState) -> None:
    if state.header.active_turn or not state.header.turn_queue or rules.active_parking(state):
        return
    next_id, *rest = state.header.turn_queue
    state.header.turn_queue = rest
    turn = state.turns[next_id]
    turn.status = "running"
    state.touch(turn)
    state.header.active_turn = next_id
    state.emit("turn.started", turn_id=next_id)
    add_user_input(state, next_id, turn.input or {})


def _final_output(state: SessionState, data: Any) -> Any:
    """A sub-agent's result: the `done` data if any, else its last assistant message's text."""
    if data is not None:
        return data
    for node in reversed(state.tree.active_path()):
        if node.message.get("role") == "assistant" and node.message.get("content"):
            return node.message["content"]
    return None
