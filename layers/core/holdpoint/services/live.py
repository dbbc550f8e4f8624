"""Live events over the WebSocket API (docs/PROTOCOL.md, "Live events").

API Gateway holds the connections; nothing waits. The process that commits a session's events
(the engine, the API function) posts them to the session's connections right after the commit
(`publish`, the store's `committed` hook). A subscriber gets what it missed from the event log
(`subscribe` with `after_seq`) and the live frames, in no promised order. The subscription is
written before the log is read, so no commit is missed: one before the read is in the log, one
after the write posts to the subscriber, and one in between does both, its post able to arrive
before the catch-up that also holds its events. Nothing orders one connection's frames (independent
processes post them): every event carries its `seq`, and the client orders by it
(docs/PROTOCOL.md, "No gap, no duplicate"):

- an event that arrives twice (in both the catch-up and a live post) is dropped by seq, and one
  that arrives before the events ahead of it is held until the catch-up brings them;
- a post lost to a crash between a commit and its post shows as a gap at the session's next
  event, and the client subscribes again from the last seq it has, which the log fills; a crash
  on a session's last event is filled by the client's keep-alive subscribe (every 5 minutes,
  under API Gateway's 10-minute idle timeout) or its reconnect.

A subscription in another format (`format: "ag-ui"`) gets the same frames translated by that
format's translation (`Live.formats`: the AG-UI bridge's `live_frames`, the one mapping, the HTTP
channel's, wired in by the assembly): catch-up, committed events and deltas alike.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Container, Iterator, Mapping
from typing import Any

from holdpoint.core.errors import QuotaExceeded, Refusal
from holdpoint.core.state import SessionState
from holdpoint.ports import Connections, Frames, SessionsAndAgents
from holdpoint.services.caller import Caller
from holdpoint.services.streams import holder, visible

log = logging.getLogger("holdpoint.services.live")

LIFETIME_SECS = 2 * 3600
KEY_LEASE_SECS = 600
"""An API key's subscription lasts this long unless a subscribe (the client's 5-minute keep-alive)
renews it after checking the key again: a revoked key's live posts stop within it."""
MAX_CATCH_UP = 100
"""Events one subscribe sends per session from the log (one Query page); past it `has_more` asks
the client to subscribe again from `through_seq`."""
FRAME_BUDGET = 30 * 1024
"""Below API Gateway's 32 KB frame, with room for the frame's own fields."""
MAX_STREAMS = 256
"""LLM calls whose `ag-ui` subscribers this process remembers (`Live.streamed`); the oldest go first."""

LiveFormat = Callable[[dict[str, Any], SessionState | None, Container[str]], list[dict[str, Any]]]
"""A subscription format other than the log's own `events`: one live frame (`events`, `delta`,
`delta_end`) as the frames its subscriber gets, given the session (for `events`) and the calls
whose first delta that subscriber was sent. A bridge's (the AG-UI bridge's `live_frames`), so the
services never import one: the assembly hands them in."""


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def frames_of(session_id: str, events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """`events` frames of at most `FRAME_BUDGET` bytes; an event too large for one frame is sent
    without its `data` and `omitted: true` (the client reads it from `GET .../events`)."""
    batch: list[dict[str, Any]] = []
    used = 0
    for event in events:
        size = _size(event)
        if size > FRAME_BUDGET:
            event = {**{k: event[k] for k in ("seq", "type", "at") if k in event}, "omitted": True}
            size = _size(event)
        if batch and used + size > FRAME_BUDGET:
            yield {"type": "events", "session_id": session_id, "events": batch}
            batch, used = [], 0
        batch.append(event)
        used += size + 1
    if batch:
        yield {"type": "events", "session_id": session_id, "events": batch}


def error_frame(code: str, message: str, param: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "error", **extra, "error": {"code": code, "message": message, "param": param}}


class Live:
    def __init__(self, store: SessionsAndAgents, connections: Connections, frames: Frames,
                 clock: Callable[[], float] = time.time, formats: Mapping[str, LiveFormat] | None = None) -> None:
        self.store, self.connections, self.frames, self.clock = store, connections, frames, clock
        self.formats: Mapping[str, LiveFormat] = formats or {}
        """A subscription's format -> its translation; a format not here is sent the log's frames."""
        self.streamed: dict[str, set[str]] = {}
        """call id -> the `ag-ui` connections this process sent its first delta (their text is
        streamed, so its committed message adds only its tool calls; the format's translation)."""
        self._streams_lock = threading.Lock()  # the local stack runs several handlers in one process

    def connect(self, caller: Caller, connection_id: str, connected_at: float) -> None:
        """`$connect` (already authorized): the connection's item, gone at the connection's end;
        `QuotaExceeded` when the caller has `live_connections_per_caller` connections open."""
        self.connections.open(connection_id, caller.tenant, self._ends(caller, connected_at), holder(caller))

    @staticmethod
    def _ends(caller: Caller, connected_at: float) -> int:
        """The connection's end: API Gateway's 2 hours, or its client token's `exp` if sooner."""
        ends = int(connected_at) + LIFETIME_SECS
        return min(ends, caller.expires) if caller.expires is not None else ends

    def subscribe(self, caller: Caller, connection_id: str, connected_at: float,
                  after: dict[str, int], fmt: str = "events") -> None:
        """Follow each session (`session id -> after_seq`) the caller may read, then send it the
        events after `after_seq` from the log and a `subscribed` frame. A session the caller may
        not read is answered `not_found`, as over HTTP, and nothing is recorded for it. A
        credential that expired or was revoked since `$connect` is refused and the connection closed."""
        expires = self._admitted(caller, connection_id, connected_at)
        if expires is None:
            return
        for session_id, after_seq in after.items():
            try:
                visible(self.store, caller, session_id)
            except Refusal as exc:
                self.frames.post(connection_id, error_frame(exc.code, exc.message, "session_ids",
                                                            session_id=session_id))
                continue
            try:
                followed = self.connections.subscribe(caller.tenant, session_id, connection_id, expires, fmt)
            except QuotaExceeded as exc:
                self.frames.post(connection_id, error_frame("quota_exceeded", str(exc), "session_ids",
                                                            session_id=session_id, limit=exc.limit))
                continue
            if not followed:
                self.frames.post(connection_id, error_frame(
                    "limit_exceeded", "this connection follows as many sessions as it may", "session_ids",
                    session_id=session_id))
                continue
            self.catch_up(caller.tenant, session_id, connection_id, after_seq, fmt)

    def _admitted(self, caller: Caller, connection_id: str, connected_at: float) -> int | None:
        """When the subscriptions of this message end; None, with the connection refused and
        closed, for a client token past its `exp` or an API key revoked (one GetItem per message).
        A key's subscriptions last `KEY_LEASE_SECS`, renewed by each subscribe (the keep-alive)."""
        now = self.clock()
        ends = self._ends(caller, connected_at)
        lapsed = caller.expires is not None and now >= caller.expires
        if caller.key_hash is not None:
            ends = min(ends, int(now) + KEY_LEASE_SECS)
            lapsed = self.store.get_api_key(caller.key_hash) is None
        if not lapsed:
            return ends
        self.frames.post(connection_id, error_frame(
            "unauthorized", "the credential this connection opened with has expired or was revoked; "
            "connect again with a valid one", "authorization"))
        self.frames.close(connection_id)
        return None

    def catch_up(self, tenant: str, session_id: str, connection_id: str, after_seq: int,
                 fmt: str = "events") -> None:
        """One page of the log after `after_seq` (`MAX_CATCH_UP` events, one Query), then
        `subscribed`, whose `has_more` asks for the next page (a subscribe from `through_seq`). In
        `ag-ui` translated with the session as loaded once here, up to its seq (it holds every
        message those events name; later ones come live, as the subscription is written before the load)."""
        state = self.store.load(tenant, session_id) if fmt in self.formats else None
        events = self.store.events(tenant, session_id, after_seq, MAX_CATCH_UP)
        more = len(events) == MAX_CATCH_UP
        if state is not None and events and events[-1].seq > state.header.seq:
            events = [e for e in events if e.seq <= state.header.seq]
            more = False  # what is past the load comes live
        for frame in self._formatted(fmt, list(frames_of(session_id, [e.wire() for e in events])), state, set()):
            if not self.frames.post(connection_id, frame):
                self.connections.drop(tenant, session_id, connection_id)
                return
        through = events[-1].seq if events else after_seq
        self.frames.post(connection_id, {"type": "subscribed", "session_id": session_id, "after_seq": after_seq,
                                         "through_seq": through, "has_more": more})

    def publish(self, state: SessionState) -> None:
        """After a commit: its events to every connection that follows the session; a connection
        that is gone (410) stops following it. Never raises: the commit stands whatever happens
        to its posts (a lost one is a gap the client fills)."""
        if not state.events:
            return
        try:
            self._publish(state)
        except Exception:
            log.exception("posting the events of %s failed", state.header.session_id)

    def _publish(self, state: SessionState) -> None:
        h = state.header
        self.fan_out(h.tenant, h.session_id, list(frames_of(h.session_id, [e.wire() for e in state.events])), state)
        for event in state.events:
            if event.type == "message.added" and event.data.get("call_id"):
                with self._streams_lock:
                    self.streamed.pop(str(event.data["call_id"]), None)

    def fan_out(self, tenant: str, session_id: str, frames: list[dict[str, Any]],
                state: SessionState | None = None, followers: dict[str, str] | None = None) -> dict[str, str]:
        """Frames (`events`, `delta`, `delta_end`) to every connection that follows the session, each
        in its subscription's format; a connection that is gone (410) stops following it. The
        followers still there. `followers` (`Connections.followers`, looked up once for a whole
        stream) saves the Query."""
        if followers is None:
            followers = self.connections.followers(tenant, session_id)
        kept = dict(followers)
        for connection_id, fmt in followers.items():
            calls: set[str] = set()
            if fmt in self.formats:
                self._note_stream(connection_id, frames)
                with self._streams_lock:
                    calls = {c for c, conns in self.streamed.items() if connection_id in conns}
            try:
                for frame in self._formatted(fmt, frames, state, calls):
                    if not self.frames.post(connection_id, frame):
                        self.connections.drop(tenant, session_id, connection_id)
                        kept.pop(connection_id)
                        break
            except Exception:  # one connection's failure is not the others': a lost post is a gap
                log.exception("posting to %s of %s failed", connection_id, session_id)
        for frame in frames:
            if frame.get("type") == "delta_end" and frame.get("reason") != "finished":
                with self._streams_lock:
                    self.streamed.pop(str(frame.get("call_id")), None)  # no committed message follows
        return kept

    def _note_stream(self, connection_id: str, frames: list[dict[str, Any]]) -> None:
        """Remember the calls whose first delta goes to this `ag-ui` connection (at most `MAX_STREAMS`)."""
        for frame in frames:
            if frame.get("type") == "delta" and frame.get("index") == 0:
                with self._streams_lock:
                    self.streamed.setdefault(str(frame.get("call_id")), set()).add(connection_id)
                    while len(self.streamed) > MAX_STREAMS:
                        self.streamed.pop(next(iter(self.streamed)))

    def _formatted(self, fmt: str, frames: list[dict[str, Any]], state: SessionState | None,
                   calls: set[str]) -> list[dict[str, Any]]:
        translate = self.formats.get(fmt)
        if translate is None:
            return frames
        return [out for frame in frames for out in translate(frame, state, calls)]

    def publish_delta(self, tenant: str, session_id: str, followers: dict[str, str],
                      frame: dict[str, Any]) -> dict[str, str]:
        """An ephemeral frame (a streamed reply's `delta` or `delta_end`, services/streaming.py) to
        the followers given (connection -> format, looked up once per call by its caller), each in
        its format; returns those still open (a 410 stops a connection following the session).
        Never raises: deltas are not the record."""
        try:
            return self.fan_out(tenant, session_id, [frame], followers=followers)
        except Exception:
            log.exception("posting a delta of %s failed", session_id)
            return followers

    def disconnect(self, connection_id: str) -> None:
        self.connections.disconnect(connection_id)
