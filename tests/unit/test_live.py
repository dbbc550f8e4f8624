"""services.live without AWS: frames stay under API Gateway's 32 KB, an event too large for one is
sent without its data, a 410 stops the connection following the session, and a failing post
never fails the commit that made the events."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.core.state import SessionState
from holdpoint.services.live import FRAME_BUDGET, Live, frames_of


class FakeConnections:
    def __init__(self, following: list[str]) -> None:
        self.ids = following
        self.dropped: list[str] = []

    def following(self, tenant: str, session_id: str) -> list[str]:
        return list(self.ids)

    def drop(self, tenant: str, session_id: str, connection_id: str) -> None:
        self.dropped.append(connection_id)


class FakeFrames:
    def __init__(self, gone: set[str], fail: bool = False) -> None:
        self.gone, self.fail = gone, fail
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def post(self, connection_id: str, frame: dict[str, Any]) -> bool:
        if self.fail:
            raise RuntimeError("the management API is down")
        self.sent.append((connection_id, frame))
        return connection_id not in self.gone


def state_with_events(n: int) -> SessionState:
    state = SessionState.new("t", "s1", "a", now=0.0)
    for i in range(n):
        state.emit("session.note", text=f"event {i}")
    return state


def test_live_frames_stay_under_the_frame_limit_and_omit_an_event_too_large() -> None:
    events = [{"seq": i, "type": "x", "at": "", "data": {"text": "y" * 4000}} for i in range(1, 20)]
    events.append({"seq": 20, "type": "x", "at": "", "data": {"text": "z" * 40_000}})
    frames = list(frames_of("s1", events))
    assert len(frames) > 1 and all(len(json.dumps(f).encode()) <= 32 * 1024 for f in frames)
    sent = [e for f in frames for e in f["events"]]
    assert [e["seq"] for e in sent] == list(range(1, 21))
    assert sent[-1] == {"seq": 20, "type": "x", "at": "", "omitted": True} and FRAME_BUDGET < 32 * 1024


def test_live_a_gone_connection_stops_following_and_the_others_still_get_the_events() -> None:
    connections, frames = FakeConnections(["gone", "here"]), FakeFrames({"gone"})
    Live(None, connections, frames).publish(state_with_events(2))  # type: ignore[arg-type]
    assert connections.dropped == ["gone"]
    assert [e["seq"] for c, f in frames.sent if c == "here" for e in f["events"]] == [1, 2]


def test_live_a_failing_post_never_fails_the_commit() -> None:
    connections = FakeConnections(["c1"])
    Live(None, connections, FakeFrames(set(), fail=True)).publish(state_with_events(1))  # type: ignore[arg-type]
    assert connections.dropped == []


def test_live_a_commit_without_events_reads_no_connection() -> None:
    class Refusing(FakeConnections):
        def following(self, tenant: str, session_id: str) -> list[str]:
            raise AssertionError("no events, no Query")

    Live(None, Refusing([]), FakeFrames(set())).publish(state_with_events(0))  # type: ignore[arg-type]


def test_live_gateway_limits_idle_ten_minutes_and_two_hours_however_busy() -> None:
    """The local gateway closes what API Gateway closes: a connection with no message either way
    for 10 minutes, and every connection at 2 hours, even one that keeps talking."""
    from holdpoint_local.wsgateway import IDLE_SECS, LIFETIME_SECS, _Conn, expired

    def conn(name: str, connected: float, active: float) -> _Conn:
        return _Conn(id=name, socket=None, connected_at=connected, source_ip="", user_agent="",  # type: ignore[arg-type]
                     last_active=active)

    now = 10_000.0
    conns = [conn("fresh", now - 5, now - 5),
             conn("idle-just-under", now - 700, now - IDLE_SECS + 1),
             conn("idle-over", now - 700, now - IDLE_SECS - 1),
             conn("busy-under-2h", now - LIFETIME_SECS + 1, now),
             conn("busy-over-2h", now - LIFETIME_SECS - 1, now)]
    assert [c.id for c in expired(conns, now)] == ["idle-over", "busy-over-2h"]
