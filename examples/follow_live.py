"""Follow a session over Holdpoint's WebSocket API: subscribe from `after_seq`, print each event
once and in `seq` order, and stop when the session's turn finishes or fails.

    SID=ses_... .venv/bin/python examples/follow_live.py   # HOLDPOINT_LIVE_URL, HOLDPOINT_API_KEY: make serve's

The server does not order the frames (docs/PROTOCOL.md, "No gap, no duplicate"): a commit's live
post can overtake a subscribe's catch-up from the log, and an event can come twice (in both). So the
follower keeps the last `seq` it printed, drops an event at or below it, and holds one further on
until the events before it have come; one still missing once the subscribe is answered (a gap: a
post that was lost) and a catch-up with `has_more` are filled by subscribing again from that `seq`.
The same subscribe every 5 minutes keeps the connection under API Gateway's idle timeout, and a
closed connection is opened again and subscribed from it (`local/holdpoint_local/live_client.py`
is the asyncio version the tests use).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

KEEPALIVE_SECS = 300.0
ENDS = ("turn.finished", "turn.failed")


class Follower:
    def __init__(self, session_id: str, after_seq: int = 0) -> None:
        self.session_id = session_id
        self.last = after_seq  # the last seq printed
        self.early: dict[int, dict[str, Any]] = {}  # events past a missing one, by seq
        self.answering = False  # a subscribe is sent and its `subscribed` frame has not come
        self.done = False

    def subscribe(self, ws: ClientConnection) -> None:
        ws.send(json.dumps({"action": "subscribe", "session_ids": [self.session_id], "after_seq": self.last}))
        self.answering = True

    def take(self, ws: ClientConnection, frame: dict[str, Any]) -> None:
        """One frame: its events kept by seq and printed once every event before them is; a
        subscribe again, once the last one is answered, for a gap or the log's next page."""
        kind = frame.get("type")
        more = kind == "subscribed" and bool(frame.get("has_more"))
        if kind == "events" and frame.get("session_id") == self.session_id:
            for event in frame["events"]:
                if event["seq"] > self.last:
                    self.early.setdefault(event["seq"], event)
        elif kind == "subscribed":
            self.answering = False
        elif kind == "error":
            if "retry_after" not in frame:  # not_found, unauthorized, ...: nothing to wait for
                raise SystemExit(f"{frame['error']['code']}: {frame['error']['message']}")
            time.sleep(float(frame["retry_after"]))  # AWS refused it about load: the same subscribe again
            self.subscribe(ws)
        while self.last + 1 in self.early and not self.done:
            event = self.early.pop(self.last + 1)
            self.last = event["seq"]
            print(event["seq"], event["type"], flush=True)
            self.done = event["type"] in ENDS
        if not self.done and not self.answering and (self.early or more):
            self.subscribe(ws)  # a gap, or the log's next page

    def run(self, ws: ClientConnection) -> None:
        self.subscribe(ws)
        while not self.done:
            try:
                raw = ws.recv(timeout=KEEPALIVE_SECS)
            except TimeoutError:
                self.subscribe(ws)  # the keep-alive, which also fills a lost post of the last event
                continue
            self.take(ws, json.loads(raw))


def follow(url: str, key: str, session_id: str, after_seq: int = 0) -> None:
    follower = Follower(session_id, after_seq)
    while not follower.done:
        try:
            with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
                follower.run(ws)
        except ConnectionClosed as exc:
            if exc.rcvd is None or exc.rcvd.code != 1001:  # 1001: API Gateway's idle or 2-hour close
                raise
            follower.early.clear()  # the new subscribe from the last seq sends them again


if __name__ == "__main__":
    session = sys.argv[1] if len(sys.argv) > 1 else os.environ["SID"]
    follow(os.environ.get("HOLDPOINT_LIVE_URL", "ws://127.0.0.1:8788/live"),
           os.environ.get("HOLDPOINT_API_KEY", "hp_dev_local_key"), session)
