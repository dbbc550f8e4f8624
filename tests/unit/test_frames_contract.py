"""The `ports.Frames` contract (docs/PROTOCOL.md, "Live events"), held by the management-API
frames (aws/frames.py) and their in-memory twin (memory/frames.py): a post delivers the frame's
JSON to its connection; a gone connection answers False, and a closed one is gone; closing a gone
connection is no error.

`ManagementFrames` runs against the local stack's WebSocket gateway
(holdpoint_local/emulators/wsgateway.py: real sockets, its `@connections` API answering 410
GoneException as API Gateway does), with its IAM check waived (that check is
tests/security/test_management_api.py's), not against moto's in-process management API: moto
keeps every connection id it is asked about (a `defaultdict`), so it never answers 410 and a
deleted connection takes frames again, and with holdpoint_local's fix 24 it only authorises the
call and keeps nothing. The twin holds no sockets: a connection it was not told is gone takes
frames, so "an id that never connected is gone" is the gateway's alone and not in the contract."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from holdpoint.core.jsontypes import JsonObject
from holdpoint_local.memory.frames import MemoryFrames
from tests.waiting import wait_for

FRAME: JsonObject = {"type": "events", "session_id": "s1", "events": [{"seq": 1, "text": "h\u00e9llo", "n": None}]}


class MemorySide:
    def __init__(self) -> None:
        self.frames = MemoryFrames()
        self._ids = itertools.count()

    def open(self) -> str:
        return f"c{next(self._ids)}"

    def hang_up(self, connection_id: str) -> None:
        self.frames.gone.add(connection_id)

    def received(self, connection_id: str, count: int) -> list[Any]:
        return list(self.frames.received(connection_id))


class GatewaySide(contextlib.ExitStack):
    """Clients connected to the local WebSocket gateway, each known by the id the gateway gave
    it, all closed when the side is."""

    def __init__(self, gateway: Any) -> None:
        from holdpoint.aws.frames import ManagementFrames

        super().__init__()
        self.gateway = gateway
        self.frames = ManagementFrames(endpoint_url=gateway.management_url)
        self.clients: dict[str, ClientConnection] = {}

    def open(self) -> str:
        before = set(self.gateway.connections)
        client = self.enter_context(connect(self.gateway.url))
        [connection_id] = wait_for(lambda: set(self.gateway.connections) - before, "the gateway to hold it", 10)
        self.clients[connection_id] = client
        return str(connection_id)

    def hang_up(self, connection_id: str) -> None:
        self.clients[connection_id].close()
        wait_for(lambda: connection_id not in self.gateway.connections, "the gateway to let the connection go", 10)

    def received(self, connection_id: str, count: int) -> list[Any]:
        client = self.clients[connection_id]
        out = [json.loads(client.recv(timeout=10)) for _ in range(count)]
        with pytest.raises((TimeoutError, ConnectionClosed)):
            client.recv(timeout=0)  # nothing more is waiting (or ever will be, once closed)
        return out


@pytest.fixture(scope="module")
def gateway() -> Iterator[Any]:
    """The local WebSocket gateway with no routes (a client is let in and never routed), and
    every management call allowed."""
    from holdpoint_local.emulators import wsgateway

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wsgateway, "iam_refusal", lambda *args: None)
        started = wsgateway.WebSocketGateway().start(wsgateway.LiveRoutes("api0", {}, None), {}, "")
        yield started
        started.stop()


@pytest.fixture(params=["memory", "gateway"])
def side(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemorySide()
        return
    with GatewaySide(request.getfixturevalue("gateway")) as gateway_side:
        yield gateway_side


def _warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the management-API frames logged as a failure (a gone connection is none)."""
    return [r.getMessage() for r in caplog.records if r.name == "holdpoint.aws.frames"]


def test_live_a_post_delivers_the_frames_json_to_its_connection_in_order(side: Any) -> None:
    """Its JSON, not the object: the sender changing its frame afterwards changes nothing sent."""
    one, other = side.open(), side.open()
    second: JsonObject = {"type": "subscribed", "session_id": "s1", "through_seq": 1, "has_more": False}
    mine = json.loads(json.dumps(FRAME))
    assert side.frames.post(one, mine) is True
    mine["events"].clear()
    assert side.frames.post(one, second) is True
    assert side.frames.post(other, second) is True
    assert side.received(one, 2) == [FRAME, second]
    assert side.received(other, 1) == [second]


def test_live_closing_a_gone_connection_is_no_error(side: Any, caplog: pytest.LogCaptureFixture) -> None:
    side.frames.close("never-connected")
    connection = side.open()
    side.frames.close(connection)
    side.frames.close(connection)
    assert _warned(caplog) == []


def test_live_a_post_to_a_gone_connection_is_false(side: Any, caplog: pytest.LogCaptureFixture) -> None:
    here, gone = side.open(), side.open()
    side.hang_up(gone)
    assert side.frames.post(gone, FRAME) is False
    assert side.frames.post(here, FRAME) is True
    assert side.received(here, 1) == [FRAME]
    assert _warned(caplog) == []


def test_live_a_closed_connection_is_gone_to_the_next_post(side: Any) -> None:
    connection = side.open()
    assert side.frames.post(connection, FRAME) is True
    side.frames.close(connection)
    assert side.frames.post(connection, FRAME) is False
    assert side.received(connection, 1) == [FRAME]
