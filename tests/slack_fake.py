"""A local fake of the Slack Web API (`chat.postMessage`, `chat.update`) that the real
`slack_sdk.WebClient(base_url=...)` talks to, and a signer of interaction requests made the way
Slack signs them (v0 HMAC-SHA256 over `v0:{timestamp}:{body}`)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode

from tests.answering import send_json


class SlackFake:
    """Records every call as `(method, token, arguments)`; answers like Slack does."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.refuse_posts = 0  # answer this many of the next chat.postMessage calls `ratelimited`
        self.messages: dict[str, dict[str, Any]] = {}
        self.posts: list[tuple[str, dict[str, Any]]] = []  # every chat.postMessage: (ts, arguments)
        self._ts = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if "json" in (self.headers.get("Content-Type") or ""):
                    args = json.loads(raw or "{}")
                else:
                    args = dict(parse_qsl(raw))
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                send_json(self, fake.answer(self.path.rsplit("/", 1)[-1], token, args))

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll: `stop()` (shutdown) waits for the loop to see it, up to one poll interval.
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def answer(self, method: str, token: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((method, token, args))
        if not token.startswith("xoxb-"):
            return {"ok": False, "error": "invalid_auth"}
        if method == "chat.postMessage" and self.refuse_posts > 0:
            self.refuse_posts -= 1
            return {"ok": False, "error": "ratelimited"}
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            self.messages[ts] = args
            self.posts.append((ts, args))
            return {"ok": True, "channel": "C0FAKE", "ts": ts, "message": args}
        if method == "chat.update":
            if args.get("ts") not in self.messages:
                return {"ok": False, "error": "message_not_found"}
            self.messages[args["ts"]] = args
            return {"ok": True, "channel": args.get("channel"), "ts": args["ts"]}
        return {"ok": False, "error": "unknown_method"}

    def stop(self) -> None:
        self.server.shutdown()


def sign(secret: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    """The headers Slack sends with an interaction request signed by `secret`."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}",
            "Content-Type": "application/x-www-form-urlencoded"}


def click_body(message: dict[str, Any], ts: str, button: int, user: str = "U0ALICE") -> str:
    """The form body of a `block_actions` interaction: `user` clicked button `button` of the
    message posted at `ts` (as recorded by the fake)."""
    element = message["blocks"][-1]["elements"][button]
    payload = {"type": "block_actions", "user": {"id": user, "username": user.lower()},
               "container": {"type": "message", "message_ts": ts, "channel_id": "C0FAKE"},
               "channel": {"id": "C0FAKE"}, "message": {"ts": ts, "text": message["text"]},
               "actions": [{"type": "button", "action_id": element["action_id"], "value": element["value"],
                            "block_id": "holdpoint", "action_ts": ts}]}
    return urlencode({"payload": json.dumps(payload)})
