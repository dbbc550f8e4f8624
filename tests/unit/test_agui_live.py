"""The AG-UI bridge's live_frames, the WebSocket's `format: "ag-ui"` (PROTOCOL.md "Live events"), on
synthetic frames: deltas become TEXT_MESSAGE_START/CONTENT/END under the committed message's id,
the committed message then adds only its tool calls, a subscriber that joined in the middle of a
message gets it whole when committed, log events map as over HTTP, and frames stay under 32 KB
with a `through_seq` that resumes without a gap or a repeat."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.bridges.agui import live as agui
from holdpoint.core.state import SessionState, Turn, derive

SID = "s1"
CALL = "call-1"
MID = derive("msg", SID, "llm", CALL)


def delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "delta", "session_id": SID, "call_id": CALL, "index": index, "text": text}


def end(reason: str = "finished") -> dict[str, Any]:
    return {"type": "delta_end", "session_id": SID, "call_id": CALL, "reason": reason}


def events_of(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert all(f["type"] == "ag-ui" and f["session_id"] == SID for f in frames)
    return [e for f in frames for e in f["events"]]


def committed(content: str, tool_calls: list[dict[str, Any]] | None = None) -> tuple[SessionState, dict[str, Any]]:
    """A session whose turn's LLM call committed its message: the state and its `events` frame."""
    state = SessionState.new("t", SID, "a", now=0.0)
    state.emit("turn.started", turn_id="turn-1")
    state.add_node("u1", None, {"role": "user", "content": "hi"})
    state.emit("message.added", message_id="u1", role="user")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    state.add_node(MID, "u1", message)
    state.emit("message.added", message_id=MID, role="assistant", call_id=CALL)
    return state, {"type": "events", "session_id": SID, "events": [e.wire() for e in state.events]}


def test_agui_live_deltas_are_text_message_start_content_end_under_the_committed_id() -> None:
    """START at the first delta, a CONTENT per delta, END where the committed message arrives (in
    the commit, before its RUN_FINISHED: the engine posts `delta_end` after the commit, and AG-UI
    refuses a run that finishes with a message open); `delta_end` finished adds nothing."""
    seen: set[str] = set()
    out = events_of(agui.live_frames(delta(0, "Hel"), None, seen))
    seen.add(CALL)
    out += events_of(agui.live_frames(delta(1, "lo"), None, seen))
    state, frame = committed("Hello")
    state.turns["turn-1"] = Turn(id="turn-1", order=1, status="done")
    state.emit("turn.finished", turn_id="turn-1")
    frame = {"type": "events", "session_id": SID, "events": [e.wire() for e in state.events]}
    out += events_of(agui.live_frames(frame, state, seen))
    assert agui.live_frames(end(), None, seen) == []
    assert [(e["type"], e.get("messageId")) for e in out if e.get("messageId") == MID or e["type"] == "RUN_FINISHED"] \
        == [("TEXT_MESSAGE_START", MID), ("TEXT_MESSAGE_CONTENT", MID), ("TEXT_MESSAGE_CONTENT", MID),
            ("TEXT_MESSAGE_END", MID), ("RUN_FINISHED", None)]
    assert [e.get("delta") for e in out if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["Hel", "lo"]
    assert agui.streamed_message_id(SID, CALL) == MID


def test_agui_live_a_stream_that_ends_without_its_message_ends_at_delta_end() -> None:
    for reason in ("failed", "voided"):
        ended = events_of(agui.live_frames(end(reason), None, {CALL}))
        assert ended == [{"type": "TEXT_MESSAGE_END", "messageId": MID}]


def test_agui_live_committed_message_after_its_deltas_adds_only_its_tool_calls() -> None:
    call = {"id": "tc1", "type": "function", "function": {"name": "send_email", "arguments": '{"to":"bob"}'}}
    state, frame = committed("Hello", [call])
    out = events_of(agui.live_frames(frame, state, {CALL}))
    assert [e["type"] for e in out] == ["RUN_STARTED", "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                                        "TOOL_CALL_END"]
    assert out[2]["parentMessageId"] == MID
    assert not any(e.get("messageId") == MID and e["type"] in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT")
                   for e in out)


def test_agui_live_subscriber_that_joined_mid_message_gets_it_whole_when_committed() -> None:
    assert agui.live_frames(delta(3, "lo"), None, set()) == []
    assert agui.live_frames(end(), None, set()) == []
    state, frame = committed("Hello")
    out = events_of(agui.live_frames(frame, state, set()))
    assert out == [{"type": "RUN_STARTED", "threadId": SID, "runId": "turn-1"},
                   {"type": "TEXT_MESSAGE_START", "messageId": MID, "role": "assistant"},
                   {"type": "TEXT_MESSAGE_CONTENT", "messageId": MID, "delta": "Hello"},
                   {"type": "TEXT_MESSAGE_END", "messageId": MID}]


def test_agui_live_turn_end_and_tool_result_map_as_over_http() -> None:
    state, _ = committed("Hello")
    state.add_node(derive("msg", SID, "tool", "tc1"), MID, {"role": "tool", "tool_call_id": "tc1", "content": "sent"})
    state.emit("call.settled", call_id="tc1", kind="tool_call", ok=True)
    state.turns["turn-1"] = Turn(id="turn-1", order=1, status="done", data={"ok": 1})
    state.emit("turn.finished", turn_id="turn-1", data={"ok": 1})
    frame = {"type": "events", "session_id": SID, "events": [e.wire() for e in state.events[-2:]]}
    out = events_of(agui.live_frames(frame, state))
    assert out == [{"type": "TOOL_CALL_RESULT", "messageId": derive("msg", SID, "tool", "tc1"), "toolCallId": "tc1",
                    "content": "sent", "role": "tool"},
                   {"type": "RUN_FINISHED", "threadId": SID, "runId": "turn-1", "outcome": {"type": "success"},
                    "result": {"ok": 1}}]


def test_agui_live_frames_stay_under_the_limit_and_through_seq_resumes_without_a_gap() -> None:
    state, frame = committed("x" * 100_000)
    frames = agui.live_frames(frame, state)
    assert len(frames) > 1 and all(len(json.dumps(f).encode()) <= 32 * 1024 for f in frames)
    text = "".join(e["delta"] for e in events_of(frames) if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "x" * 100_000
    last_seq = frame["events"][-1]["seq"]
    throughs = [f["through_seq"] for f in frames]
    assert throughs[-1] == last_seq and all(t < last_seq for t in throughs[:-1])  # the message's seq is done last
    positions = [tuple(p) for f in frames for p in f["positions"]]
    assert len(positions) == len(set(positions)) == len(events_of(frames))
    assert {f["after_seq"] for f in frames} == {0}


def test_agui_live_log_frame_without_agui_events_still_moves_through_seq() -> None:
    state = SessionState.new("t", SID, "a", now=0.0)
    state.emit("call.started", call_id="c9", kind="llm_call")
    frame = {"type": "events", "session_id": SID, "events": [{**e.wire(), "seq": 7} for e in state.events]}
    assert agui.live_frames(frame, state) == [{"type": "ag-ui", "session_id": SID, "events": [], "after_seq": 6,
                                               "through_seq": 7, "positions": []}]


def test_agui_live_subscribed_and_error_frames_pass_through() -> None:
    frame = {"type": "subscribed", "session_id": SID, "after_seq": 0, "through_seq": 3, "has_more": False}
    assert agui.live_frames(frame, None) == [frame]


def test_agui_live_an_event_too_large_for_a_frame_is_cut_to_fit() -> None:
    state, _ = committed("ok")
    tool_mid = derive("msg", SID, "tool", "tc1")
    state.add_node(tool_mid, MID, {"role": "tool", "tool_call_id": "tc1", "content": "r" * 200_000})
    state.emit("call.settled", call_id="tc1", kind="tool_call", ok=True)
    state.turns["turn-1"] = Turn(id="turn-1", order=1, status="done", data={"big": "d" * 100_000})
    state.emit("turn.finished", turn_id="turn-1", data={"big": "..."})
    frame = {"type": "events", "session_id": SID, "events": [e.wire() for e in state.events[-2:]]}
    frames = agui.live_frames(frame, state)
    assert all(len(json.dumps(f).encode()) <= 32 * 1024 for f in frames)
    result, finished = events_of(frames)
    assert result["type"] == "TOOL_CALL_RESULT" and result["content"].startswith("r") and len(result["content"]) < 5000
    assert finished == {"type": "RUN_FINISHED", "threadId": SID, "runId": "turn-1", "outcome": {"type": "success"}}
