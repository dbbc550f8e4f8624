"""A client of the WebSocket API (docs/PROTOCOL.md, "Live events") that hands its caller each
session's events once and in order: frames are taken by `seq`, a repeat is dropped, and a gap
(a post lost between a commit and its post, or live events overtaking the catch-up) is filled by
subscribing again from the last seq it has, holding what came early until the gap is filled; a
subscribe AWS refused (a `throttled` or `unavailable` error frame) is sent again after `retry_after`.
A streamed reply's `delta` and `delta_end` frames (ephemeral, no seq) go to `deltas` as they
come, each with the `time.perf_counter()` of its arrival. The tests and bench/live_latency.py use it."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

KEEPALIVE_SECS = 300.0
"""A subscribe this often keeps the connection under API Gateway's 10-minute idle timeout and
fills a gap left by a lost post of a session's last event."""


@dataclass
class _Session:
    last: int
    early: dict[int, dict[str, Any]] = field(default_factory=dict)
    filling: bool = False


OPEN_SECS = 60.0
"""As long as the gateway may hold a handshake: API Gateway's 29 s for the authorizer, then 29 s for
`$connect` (a cold start of either is in them)."""

RETRIED = ("throttled", "unavailable")
"""The error frames of a subscribe AWS refused about load: the client subscribes again."""


class Follower:
    """`async with Follower(url, token) as f: await f.follow(sid); sid, event = await f.next()`."""

    def __init__(self, url: str, token: str | None = None, *, query_token: bool = False,
                 fmt: str | None = None) -> None:
        self.url, self.token, self.query_token, self.fmt = url, token, query_token, fmt
        self.ws: ClientConnection | None = None
        self.sessions: dict[str, _Session] = {}
        self.ready: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self.deltas: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue()
        self.errors: list[dict[str, Any]] = []
        self.subscribed: list[dict[str, Any]] = []
        self.agui: list[dict[str, Any]] = []
        """`ag-ui` frames as they came (`fmt="ag-ui"`: this client neither orders nor dedupes them)."""
        self.duplicates = 0
        self.gaps = 0
        self.frames = 0
        self._reader: asyncio.Task[None] | None = None
        self._retry: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Follower:
        url, headers = self.url, {}
        if self.token and self.query_token:
            url = f"{url}?token={self.token}"
        elif self.token:
            headers = {"Authorization": f"Bearer {self.token}"}
        self.ws = await connect(url, additional_headers=headers, open_timeout=OPEN_SECS, ping_interval=None,
                                max_size=2**20, compression=None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()

    async def follow(self, session_id: str, after_seq: int = 0) -> None:
        self.sessions[session_id] = _Session(last=after_seq, filling=True)
        await self._subscribe(session_id, after_seq)

    async def _subscribe(self, session_id: str, after_seq: int) -> None:
        assert self.ws is not None
        message: dict[str, Any] = {"action": "subscribe", "session_ids": [session_id], "after_seq": after_seq}
        if self.fmt is not None:
            message["format"] = self.fmt
        await self.ws.send(json.dumps(message))

    async def next(self, timeout: float = 60) -> tuple[str, dict[str, Any]]:
        """The next event of a followed session, in seq order."""
        return await asyncio.wait_for(self.ready.get(), timeout)

    async def _read(self) -> None:
        assert self.ws is not None
        async for raw in self.ws:
            frame = json.loads(raw)
            self.frames += 1
            kind = frame.get("type")
            if kind == "events":
                await self._events(frame["session_id"], frame["events"])
            elif kind == "subscribed":
                self.subscribed.append(frame)
                await self._subscribed(frame)
            elif kind in ("delta", "delta_end"):
                self.deltas.put_nowait((time.perf_counter(), frame))
            elif kind == "error":
                self.errors.append(frame)
                if frame["error"]["code"] in RETRIED:
                    self._retry = asyncio.create_task(self._again(float(frame.get("retry_after") or 1)))
            elif kind == "ag-ui":
                self.agui.append(frame)

    async def _events(self, session_id: str, events: list[dict[str, Any]]) -> None:
        state = self.sessions.get(session_id)
        if state is None:
            return
        for event in events:
            seq = int(event["seq"])
            if seq <= state.last or seq in state.early:
                self.duplicates += 1
            else:
                state.early[seq] = event
        self._drain(session_id, state)
        if state.early and not state.filling:  # a gap: events came after one that never did
            self.gaps += 1
            state.filling = True
            await self._subscribe(session_id, state.last)

    def _drain(self, session_id: str, state: _Session) -> None:
        while state.last + 1 in state.early:
            state.last += 1
            self.ready.put_nowait((session_id, state.early.pop(state.last)))

    async def _subscribed(self, frame: dict[str, Any]) -> None:
        state = self.sessions.get(frame["session_id"])
        if state is None:
            return
        state.filling = False
        if self.fmt == "ag-ui":  # no events to count by: the catch-up went through `through_seq`
            state.last = max(state.last, int(frame.get("through_seq", state.last)))
        self._drain(frame["session_id"], state)
        if frame.get("has_more") or state.early:  # one page per subscribe: the next from the last seq
            state.filling = True
            await self._subscribe(frame["session_id"], state.last)

    async def _again(self, after: float) -> None:
        """AWS refused part of a subscribe (about load): subscribe again, after `retry_after`, to
        every session whose catch-up has not been confirmed."""
        await asyncio.sleep(after)
        for session_id, state in self.sessions.items():
            if state.filling:
                await self._subscribe(session_id, state.last)

    async def keepalive(self) -> None:
        """Subscribe again to every session from its last seq (run every `KEEPALIVE_SECS`)."""
        for session_id, state in self.sessions.items():
            await self._subscribe(session_id, state.last)
