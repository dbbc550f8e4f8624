"""The WebSocket's `format: "ag-ui"` (PROTOCOL.md, "Live events"): any live frame (`events`,
`delta`, `delta_end`) as the `ag-ui` frames a subscriber in that format gets, built on the HTTP
channel's mapping (`translation`). Pure: services.live is handed `live_frames` by the assembly
(`Live.formats`) and feeds it the session as loaded."""

from __future__ import annotations

import json
from collections.abc import Container, Iterator

from holdpoint.bridges.agui.translation import _list, _obj, ended, message_events, parked, started
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Interrupt, SessionState, derive

LIVE_BUDGET = 30 * 1024
"""An `ag-ui` frame's bytes, below API Gateway's 32 KB frame (services/live.py's budget)."""
DELTA_CHARS = 4000
"""A text or arguments delta longer than this is sent as several (at most 6 bytes a character in JSON)."""


def streamed_message_id(session_id: str, call_id: str) -> str:
    """The `messageId` of an LLM call's deltas: the id its committed message gets (core/calls.py)."""
    return derive("msg", session_id, "llm", call_id)


def live_frames(frame: JsonObject, state: SessionState | None,
                streamed: Container[str] = ()) -> list[JsonObject]:
    """A live frame as the `ag-ui` frames a subscriber in that format gets. `streamed` holds the
    calls whose first delta this subscriber was sent: their later deltas follow, and their committed
    message ends the streamed text (TEXT_MESSAGE_END, before the commit's RUN_FINISHED) and adds
    only its tool calls; a stream that ends without a committed message (failed, voided) ends at
    its `delta_end`. A call it
    joined in the middle sends it nothing until its committed message, which then comes whole.
    `events` frames need `state` (an event names its message; the tree holds it)."""
    kind, session_id = frame.get("type"), str(frame.get("session_id") or "")
    if kind == "delta":
        return _delta_frames(frame, session_id, streamed)
    if kind == "delta_end":  # "finished": its committed message ends the text (it follows, or came)
        if frame.get("call_id") not in streamed or frame.get("reason") == "finished":
            return []
        mid = streamed_message_id(session_id, str(frame["call_id"]))
        return pack(session_id, [(None, {"type": "TEXT_MESSAGE_END", "messageId": mid})])
    if kind == "events" and state is not None:
        events = [_obj(e) for e in _list(frame.get("events"))]
        seqs = [int(seq) for e in events if isinstance(seq := e.get("seq"), int)] or [0]
        return pack(session_id, list(_from_events(events, state, streamed)), after=min(seqs) - 1, last=max(seqs))
    return [frame]  # `subscribed` and `error` frames are the same in both formats


def _live(session_id: str, events: list[JsonObject], positions: list[list[int]], after: int | None,
          through: int | None) -> JsonObject:
    out: JsonObject = {"type": "ag-ui", "session_id": session_id, "events": [*events]}
    if after is not None:
        out.update(after_seq=after, through_seq=after if through is None else through,
                   positions=[[*p] for p in positions])
    return out


def _delta_frames(frame: JsonObject, session_id: str, streamed: Container[str]) -> list[JsonObject]:
    call_id, index = str(frame.get("call_id")), frame.get("index")
    mid = streamed_message_id(session_id, call_id)
    events: list[JsonObject] = []
    if index == 0:
        events.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
    elif call_id not in streamed:
        return []
    if frame.get("text"):
        events += _split({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": str(frame["text"])})
    return pack(session_id, [(None, e) for e in events]) if events else []


def _split(event: JsonObject) -> list[JsonObject]:
    """A delta event as pieces of at most `DELTA_CHARS` characters (a frame holds any one)."""
    delta = event["delta"]
    if not isinstance(delta, str):  # every delta Holdpoint builds is text
        raise TypeError("a delta is text")
    return [{**event, "delta": delta[i:i + DELTA_CHARS]} for i in range(0, len(delta), DELTA_CHARS)] or [event]


def _message_of(event: JsonObject, session_id: str) -> str | None:
    """The message an event records: `message.added`'s, or a tool call's result (recorded
    without a `message.added`, core/calls.py `settle_tool`)."""
    data = _obj(event.get("data"))
    if event.get("type") == "message.added":
        return str(data.get("message_id"))
    if event.get("type") == "call.settled" and data.get("kind") in ("tool_call", "sub_agent"):
        return derive("msg", session_id, "tool", data.get("call_id"))
    return None


def _from_events(events: list[JsonObject], state: SessionState,
                 streamed: Container[str]) -> Iterator[tuple[int | None, JsonObject]]:
    """Each log event's AG-UI events with its seq: a turn's start or resume is RUN_STARTED, its
    messages' events as over HTTP (`message_events`), its end RUN_FINISHED or RUN_ERROR, a park
    RUN_FINISHED with the interrupt outcome (several in one frame: one RUN_FINISHED, last)."""
    sid = state.header.session_id
    parks: list[Interrupt] = []
    park_seq: int | None = None
    park_turn = ""
    for event in events:
        seq, kind, data = event.get("seq"), event.get("type"), _obj(event.get("data"))
        if not (seq is None or isinstance(seq, int)):  # a log event's seq is its position
            raise TypeError("an event's seq is an integer")
        turn_id = str(data.get("turn_id") or (state.header.last_turn if event.get("omitted") else "") or "")
        if kind in ("turn.started", "turn.resumed"):
            yield seq, started(sid, turn_id)
        elif kind in ("turn.finished", "turn.failed"):
            yield seq, ended(sid, turn_id, state.turns.get(turn_id))
        elif (kind == "session.interrupted" and isinstance(iid := data.get("interrupt_id"), str)
              and iid in state.interrupts):
            interrupt = state.interrupts[iid]
            parks.append(interrupt)
            park_seq, park_turn = seq, interrupt.turn_id or state.header.active_turn or park_turn
        mid = _message_of(event, sid)
        node = state.tree.nodes.get(mid) if mid else None
        if node is not None:
            message: JsonObject = node.message
            if data.get("call_id") is not None and data.get("call_id") in streamed:
                message = {k: v for k, v in message.items() if k != "content"}  # its text came as deltas
                yield seq, {"type": "TEXT_MESSAGE_END", "messageId": mid}  # before the run can finish
            for out in message_events(message):
                for piece in _split(out) if "delta" in out else [out]:
                    yield seq, piece
    if parks:
        yield park_seq, parked(sid, park_turn, parks)


def _size(event: JsonObject) -> int:
    return len(json.dumps(event, separators=(",", ":")).encode())


def fit(event: JsonObject, budget: int = LIVE_BUDGET) -> JsonObject:
    """An event that fits one frame: deltas are split before (`_split`); a tool result too large
    is cut (its whole content is in the session's view), a run's end loses its `result` and its
    interrupts' `metadata` (the interrupts are in the session's view)."""
    if _size(event) <= budget:
        return event
    if event.get("type") == "TOOL_CALL_RESULT":
        return {**event, "content": str(event.get("content", ""))[:budget // 8]}
    if event.get("type") == "RUN_FINISHED":
        out = {k: v for k, v in event.items() if k != "result"}
        outcome = out.get("outcome")
        if isinstance(outcome, dict) and isinstance(interrupts := outcome.get("interrupts"), list):
            out["outcome"] = {**outcome, "interrupts": [{k: v for k, v in _obj(i).items() if k != "metadata"}
                                                        for i in interrupts]}
        return out
    return event


def pack(session_id: str, events: list[tuple[int | None, JsonObject]], *, after: int | None = None,
         last: int | None = None, budget: int = LIVE_BUDGET) -> list[JsonObject]:
    """AG-UI events (each with the seq of the log event it comes from; None for a delta) in
    `ag-ui` frames of at most `budget` bytes. A frame of log events (`after` is the seq before its
    first) says where it stands, as `events` frames do with their seqs: `after_seq` (a client that
    has less has a gap: it subscribes again from what it has), `through_seq` (every seq up to it
    is complete; the last frame's is `last`) and each event's `[seq, k]` position (its k-th from
    that seq), by which a client drops what the catch-up and a live post both sent."""
    logged = after is not None
    out: list[JsonObject] = []
    batch: list[JsonObject] = []
    positions: list[list[int]] = []
    used, prev, k = 0, None, 0
    for seq, whole in events:
        k = k + 1 if seq == prev else 0
        prev = seq
        event = fit(whole, budget - 200)
        size = _size(event) + (24 if logged else 1)
        if batch and used + size > budget:
            out.append(_live(session_id, batch, positions, after, (seq or 1) - 1))
            batch, positions, used = [], [], 0
        batch.append(event)
        positions.append([seq or 0, k])
        used += size
    if batch or logged:
        out.append(_live(session_id, batch, positions, after, last))
    return out
