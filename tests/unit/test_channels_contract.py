"""The `ports.NotifyChannel` contract (docs/NOTIFICATIONS.md, N1 and N4), held by the webhook
channel (notify/webhooks.py) against a receiver on a local socket and by the in-memory twin
(memory/channels.py): a notification reaches its entry's receiver as published (a raise with the
one-click links `core.notify` put in it, which the notifier hands over too); a retried delivery
reaches it again (the receiver dedupes); an entry whose receiver refuses is `DeliveryFailed`,
with nothing taken and the other entries still served.

The receiver here answers 500 on `/down`, the twin fails the entries it is given as failing.
Slack's channel (notify/slack.py) posts to Slack's Web API and reads the interrupt back: it is
tests/unit/test_slack.py's, against a Slack fake, not this contract's."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from holdpoint.core.jsontypes import JsonObject
from holdpoint.ports import DeliveryFailed
from holdpoint_local.memory.channels import MemoryChannel

RAISED: JsonObject = {"event_id": "evt_1", "type": "interrupt.raised", "tenant": "t1", "session_id": "s1",
                      "interrupt_id": "i1", "summary": "h\u00e9llo", "links": {"approve": "https://a.example/l/1"}}
RESOLVED: JsonObject = {"event_id": "evt_2", "type": "interrupt.resolved", "tenant": "t1", "session_id": "s1",
                        "interrupt_id": "i1", "responder": {"subject": "ann", "origin": "client"}}

Side = tuple[Any, JsonObject, JsonObject, Callable[[], list[JsonObject]]]
"""A channel, an entry it serves, an entry whose receiver refuses, and what the receivers took."""


def receiver() -> tuple[ThreadingHTTPServer, list[JsonObject]]:
    """A webhook receiver that takes every POST (the body kept) but those to `/down` (500)."""
    taken: list[JsonObject] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers["Content-Length"]))
            down = self.path == "/down"
            if not down:
                taken.append(json.loads(body))
            self.send_response(500 if down else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server, taken


@pytest.fixture(params=["memory", "webhook"])
def channel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Side]:
    if request.param == "memory":
        ok, down = {"url": "https://hooks.example/ok"}, {"url": "https://hooks.example/down"}
        memory = MemoryChannel(failing=[down])
        yield memory, ok, down, lambda: [event for event, _, _ in memory.delivered]
        return
    from holdpoint.notify.webhooks import WebhookChannel

    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")  # the local stack's rule: http to this host
    server, taken = receiver()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield WebhookChannel(), {"url": f"{base}/ok"}, {"url": f"{base}/down"}, lambda: list(taken)
    server.shutdown()


def test_n1_a_notification_reaches_its_receiver_as_published(channel: Side) -> None:
    deliverer, ok, _, taken = channel
    deliverer.deliver(RAISED, ok, {"approve": "https://a.example/l/1"})
    deliverer.deliver(RESOLVED, ok, {})
    assert taken() == [RAISED, RESOLVED]


def test_n1_a_retried_delivery_reaches_the_receiver_again(channel: Side) -> None:
    deliverer, ok, _, taken = channel
    for _ in range(2):
        deliverer.deliver(RESOLVED, ok, {})
    assert taken() == [RESOLVED, RESOLVED]


def test_n4_an_entry_whose_receiver_refuses_is_delivery_failed_and_nothing_is_taken(channel: Side) -> None:
    deliverer, ok, down, taken = channel
    with pytest.raises(DeliveryFailed):
        deliverer.deliver(RAISED, down, {"approve": "https://a.example/l/1"})
    deliverer.deliver(RAISED, ok, {"approve": "https://a.example/l/1"})
    assert taken() == [RAISED]
