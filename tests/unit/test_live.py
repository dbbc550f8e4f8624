"""services.live without AWS: frames stay under API Gateway's 32 KB, an event too large for one is
sent without its data, a 410 stops the connection following the session, and a failing post
never fails the commit that made the events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from holdpoint.bridges.agui import live_frames
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Event, SessionState
from holdpoint.ports import Throttled, Unavailable
from holdpoint.services.live import FRAME_BUDGET, Live, LiveFormat, frames_of
from holdpoint_local.memory.frames import MemoryFrames

AG_UI: dict[str, LiveFormat] = {"ag-ui": live_frames}
"""The formats the assembly gives `Live`: the AG-UI bridge's translation."""


class FakeConnections:
    def __init__(self, following: list[str]) -> None:
        self.ids = following
        self.dropped: list[str] = []

    def following(self, tenant: str, session_id: str) -> list[str]:
        return list(self.ids)

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        return dict.fromkeys(self.ids, "events")

    def drop(self, tenant: str, session_id: str, connection_id: str) -> None:
        self.dropped.append(connection_id)


class DownFrames(MemoryFrames):
    """Frames whose every post raises: a failure no adapter expected."""

    def post(self, connection_id: str, frame: JsonObject) -> bool:
        raise RuntimeError("the management API is down")


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
    connections, frames = FakeConnections(["gone", "here"]), MemoryFrames({"gone"})
    Live(None, connections, frames).publish(state_with_events(2))  # type: ignore[arg-type]
    assert connections.dropped == ["gone"]
    assert [e["seq"] for c, f in frames.sent if c == "here" for e in f["events"]] == [1, 2]


def test_live_a_failing_post_never_fails_the_commit() -> None:
    connections = FakeConnections(["c1"])
    Live(None, connections, DownFrames()).publish(state_with_events(1))  # type: ignore[arg-type]
    assert connections.dropped == []


def test_live_a_commit_without_events_reads_no_connection() -> None:
    class Refusing(FakeConnections):
        def following(self, tenant: str, session_id: str) -> list[str]:
            raise AssertionError("no events, no Query")

    Live(None, Refusing([]), MemoryFrames()).publish(state_with_events(0))  # type: ignore[arg-type]


def test_live_gateway_limits_idle_ten_minutes_and_two_hours_however_busy() -> None:
    """The local gateway closes what API Gateway closes: a connection with no message either way
    for 10 minutes, and every connection at 2 hours, even one that keeps talking."""
    from holdpoint_local.emulators.wsgateway import IDLE_SECS, LIFETIME_SECS, _Conn, expired

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


class FormatConnections(FakeConnections):
    def __init__(self, formats: dict[str, str]) -> None:
        super().__init__(list(formats))
        self.formats = formats

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        return dict(self.formats)


def test_live_ag_ui_subscriber_gets_deltas_as_text_messages_and_the_commit_without_its_text() -> None:
    """Each connection in its own format; one that joined mid-message gets the committed text whole."""
    from tests.unit.test_agui_live import CALL, MID, SID, committed, delta, end

    connections = FormatConnections({"raw": "events", "agui": "ag-ui"})
    frames = MemoryFrames()
    live = Live(None, connections, frames, formats=AG_UI)  # type: ignore[arg-type]
    live.fan_out("t", SID, [delta(0, "Hel")])
    connections.formats["late"] = "ag-ui"
    live.fan_out("t", SID, [delta(1, "lo")])
    live.fan_out("t", SID, [end()])
    state, _ = committed("Hello")
    live.publish(state)

    def got(conn: str) -> list[tuple[str, str]]:
        return [(e["type"], e.get("delta", "")) for c, f in frames.sent if c == conn for e in f["events"]
                if f["type"] == "ag-ui" and e.get("messageId") == MID]

    assert got("agui") == [("TEXT_MESSAGE_START", ""), ("TEXT_MESSAGE_CONTENT", "Hel"),
                           ("TEXT_MESSAGE_CONTENT", "lo"), ("TEXT_MESSAGE_END", "")]
    assert got("late") == [("TEXT_MESSAGE_START", ""), ("TEXT_MESSAGE_CONTENT", "Hello"), ("TEXT_MESSAGE_END", "")]
    assert [f["type"] for c, f in frames.sent if c == "raw"] == ["delta", "delta", "delta_end", "events"]
    assert CALL not in live.streamed


class RecordingConnections(FakeConnections):
    def __init__(self) -> None:
        super().__init__([])
        self.subscribed: list[tuple[str, str, str]] = []

    def subscribe(self, tenant: str, session_id: str, connection_id: str, expires: int, fmt: str = "events") -> bool:
        self.subscribed.append((tenant, session_id, fmt))
        return True


@pytest.mark.parametrize("fmt", ["AG-UI", "agui", 1, None, ""])
def test_live_subscribe_with_a_bad_format_is_refused_naming_format_and_records_nothing(
        monkeypatch: pytest.MonkeyPatch, fmt: Any) -> None:
    from holdpoint.http import live as edge

    connections, frames = RecordingConnections(), MemoryFrames()
    monkeypatch.setattr(edge, "get_live", lambda: Live(None, connections, frames))  # type: ignore[arg-type]
    body = {"action": "subscribe", "session_ids": ["s1"], "after_seq": 0, "format": fmt}
    event = {"requestContext": {"routeKey": "subscribe", "connectionId": "c1", "connectedAt": 0,
                                "authorizer": {"tenant": "t"}}, "body": json.dumps(body)}
    assert edge.handle(event) == {"statusCode": 400}
    [(_, frame)] = frames.sent
    assert frame["type"] == "error" and frame["error"]["code"] == "invalid_request"
    assert frame["error"]["param"] == "format" and connections.subscribed == []


class OneSessionStore:
    """The store's reads `subscribe` makes, over one session's state."""

    def __init__(self, state: SessionState) -> None:
        self.state = state

    def session_exists(self, tenant: str, session_id: str, owner: Any = None) -> bool:
        return session_id == self.state.header.session_id

    def load(self, tenant: str, session_id: str) -> SessionState:
        return self.state

    def events(self, tenant: str, session_id: str, after: int, limit: int) -> list[Event]:
        return [e for e in self.state.events if e.seq > after][:limit]


@pytest.mark.parametrize(("fmt", "frame_type"), [(None, "events"), ("events", "events"), ("ag-ui", "ag-ui")])
def test_live_subscribe_records_the_format_and_catches_up_in_it(monkeypatch: pytest.MonkeyPatch, fmt: str | None,
                                                                 frame_type: str) -> None:
    from holdpoint.http import live as edge
    from tests.unit.test_agui_live import SID, committed

    state, _ = committed("Hello")
    connections, frames = RecordingConnections(), MemoryFrames()
    live = Live(OneSessionStore(state), connections, frames, formats=AG_UI)  # type: ignore[arg-type]
    monkeypatch.setattr(edge, "get_live", lambda: live)
    body: dict[str, Any] = {"action": "subscribe", "session_ids": [SID], "after_seq": 0}
    if fmt is not None:
        body["format"] = fmt
    event = {"requestContext": {"routeKey": "subscribe", "connectionId": "c1", "connectedAt": 0,
                                "authorizer": {"tenant": "t"}}, "body": json.dumps(body)}
    assert edge.handle(event) == {"statusCode": 200}
    assert connections.subscribed == [("t", SID, fmt or "events")]
    kinds = [f["type"] for _, f in frames.sent]
    assert kinds == [frame_type, "subscribed"]
    if fmt == "ag-ui":
        texts = [e.get("delta") for e in frames.sent[0][1]["events"] if e["type"] == "TEXT_MESSAGE_CONTENT"]
        assert texts == ["Hello"]


def test_live_ag_ui_catch_up_stops_at_the_session_it_loaded() -> None:
    """An event committed after the catch-up loaded the session names a message that load lacks:
    it is left to the live post (the subscription is written first), not sent without its message."""
    from tests.unit.test_agui_live import SID, committed

    state, _ = committed("Hello")
    later = Event(seq=state.header.seq + 1, type="message.added", at="",
                  data={"message_id": "m-later", "role": "assistant"})

    class Racing(OneSessionStore):
        def events(self, tenant: str, session_id: str, after: int, limit: int) -> list[Event]:
            return [*super().events(tenant, session_id, after, limit), later][:limit]

    frames = MemoryFrames()
    Live(Racing(state), RecordingConnections(), frames, formats=AG_UI).catch_up(  # type: ignore[arg-type]
        "t", SID, "c1", 0, "ag-ui")
    [(_, agui_frame), (_, done)] = frames.sent
    assert agui_frame["through_seq"] == done["through_seq"] == state.header.seq and not done["has_more"]


def test_live_connections_keep_each_subscriptions_format(aws: dict[str, str]) -> None:
    """On DynamoDB: the format is on the (session, connection) item; following again changes it."""
    from holdpoint.aws.connections import Connections

    connections = Connections(clock=lambda: 0.0)
    for conn in ("c1", "c2"):
        connections.open(conn, "t", 3600)
    assert connections.subscribe("t", "s1", "c1", 3600)
    assert connections.subscribe("t", "s1", "c2", 3600, "ag-ui")
    assert connections.followers("t", "s1") == {"c1": "events", "c2": "ag-ui"}
    assert connections.subscribe("t", "s1", "c1", 3600, "ag-ui")
    assert connections.followers("t", "s1") == {"c1": "ag-ui", "c2": "ag-ui"}
    assert sorted(connections.following("t", "s1")) == ["c1", "c2"] and connections.followers("u", "s1") == {}


class RefusedConnections(RecordingConnections):
    """AWS refusing every call about load, past the client's retries."""

    def open(self, *args: Any) -> None:
        raise Throttled("Rate exceeded")

    def subscribe(self, *args: Any, **kw: Any) -> bool:
        raise Unavailable("Service unavailable")

    def disconnect(self, connection_id: str) -> None:
        raise Throttled("Rate exceeded")


@pytest.mark.parametrize(("route", "status"), [("$connect", 503), ("subscribe", 503), ("$disconnect", 200)])
def test_live_aws_refusing_a_route_is_a_503_or_an_error_frame_to_retry_never_a_crash(
        monkeypatch: pytest.MonkeyPatch, route: str, status: int) -> None:
    from holdpoint.http import live as edge
    from tests.unit.test_agui_live import SID, committed

    frames = MemoryFrames()
    live = Live(OneSessionStore(committed("Hello")[0]), RefusedConnections(), frames)  # type: ignore[arg-type]
    monkeypatch.setattr(edge, "get_live", lambda: live)
    body = {"action": "subscribe", "session_ids": [SID], "after_seq": 0}
    event = {"requestContext": {"routeKey": route, "connectionId": "c1", "connectedAt": 0,
                                "authorizer": {"tenant": "t"}}, "body": json.dumps(body)}
    assert edge.handle(event) == {"statusCode": status}
    if route == "subscribe":  # the client subscribes again after `retry_after`
        [(_, frame)] = frames.sent
        assert (frame["type"], frame["error"]["code"], frame["retry_after"]) == ("error", "unavailable", 1)
    else:
        assert frames.sent == []
