"""A WebSocket `$connect` whose authorizer is slow, as a cold start is (R17, the gateway as API
Gateway runs it): the local gateway holds the handshake for as long as API Gateway holds an
integration (29 s), not for the WebSocket library's own 10 s.

Found by the soak in containers (`make soak-containers`): the first follower's `$connect` created
the authorizer's and the live function's containers, which took longer than 10 s, and the gateway
closed the connection without an answer (the client read "did not receive a valid HTTP response").
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from holdpoint_local.emulators import wsgateway
from holdpoint_local.emulators.runtime import LocalFunction
from holdpoint_local.live_client import Follower

COLD_START_SECS = 11.0
"""Longer than the `websockets` server's default handshake timeout (10 s), within API Gateway's 29 s."""


def _allow(event: dict[str, Any]) -> dict[str, Any]:
    return {"principalId": "p", "context": {"tenant_id": "t"},
            "policyDocument": {"Version": "2012-10-17",
                               "Statement": [{"Effect": "Allow", "Action": "execute-api:Invoke",
                                              "Resource": event["methodArn"]}]}}


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """Set at the end of the test, so an authorizer still waiting returns and its thread ends."""
    event = threading.Event()
    yield event
    event.set()


def _gateway(authorizer: LocalFunction) -> wsgateway.WebSocketGateway:
    routes = wsgateway.LiveRoutes("api0", {}, "Authorizer")
    return wsgateway.WebSocketGateway().start(routes, {"Authorizer": authorizer}, "")


def test_r17_a_connect_whose_authorizer_is_cold_for_11_s_is_admitted(released: threading.Event) -> None:
    def cold(event: dict[str, Any], _: Any) -> dict[str, Any]:
        released.wait(COLD_START_SECS)  # a cold start's length: the subject of this test, not a wait for a signal
        return _allow(event)

    gateway = _gateway(LocalFunction("Authorizer", handler=cold))
    try:
        async def connect() -> bool:
            async with Follower(gateway.url, "token") as follower:
                return follower.ws is not None

        assert asyncio.run(connect())
    finally:
        gateway.stop()


def test_r17_a_connect_whose_authorizer_outlasts_the_integration_timeout_is_answered_504(
        released: threading.Event, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wsgateway, "INTEGRATION_TIMEOUT_SECS", 0.5)

    def stuck(event: dict[str, Any], _: Any) -> dict[str, Any]:
        released.wait()
        return _allow(event)

    gateway = _gateway(LocalFunction("Authorizer", handler=stuck))
    try:
        async def connect() -> None:
            async with Follower(gateway.url, "token"):
                pass

        with pytest.raises(InvalidStatus) as refused:
            asyncio.run(connect())
        assert refused.value.response.status_code == 504
    finally:
        gateway.stop()
