"""Follow a session over Holdpoint's WebSocket API: subscribe from `after_seq`, print each event
as it is committed, and stop when the session's turn finishes or fails.

    SID=ses_... .venv/bin/python examples/follow_live.py   # HOLDPOINT_LIVE_URL, HOLDPOINT_API_KEY: make serve's

A reconnect subscribes again from the last `seq` it printed, so nothing is lost or repeated
(`local/holdpoint_local/live_client.py` does that for a long-lived follower).
"""

from __future__ import annotations

import json
import os
import sys

from websockets.sync.client import connect


def follow(url: str, key: str, session_id: str) -> None:
    with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
        ws.send(json.dumps({"action": "subscribe", "session_ids": [session_id], "after_seq": 0}))
        for raw in ws:
            frame = json.loads(raw)
            for event in frame.get("events", []):  # {"type": "events", "session_id", "events": [...]}
                print(event["seq"], event["type"], flush=True)
                if event["type"] in ("turn.finished", "turn.failed"):
                    return


if __name__ == "__main__":
    session = sys.argv[1] if len(sys.argv) > 1 else os.environ["SID"]
    follow(os.environ.get("HOLDPOINT_LIVE_URL", "ws://127.0.0.1:8788/live"),
           os.environ.get("HOLDPOINT_API_KEY", "hp_dev_local_key"), session)
