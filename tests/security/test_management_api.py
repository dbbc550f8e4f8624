"""The local WebSocket gateway's `@connections` management API (local/README.md, "IAM") answers
only a SigV4-signed call that IAM allows, as API Gateway does: an unsigned `PostToConnection`,
`GetConnection` or `DeleteConnection`, or one whose signature does not match what it carries, is
403 ForbiddenException and reaches no connection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import boto3
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from websockets.asyncio.client import ClientConnection, connect

from tests.waiting import wait_for


@asynccontextmanager
async def _connected(stack: Any) -> AsyncIterator[tuple[ClientConnection, str]]:
    """A WebSocket connection of the stack's API key, with its connection id."""
    before = set(stack.live.connections)
    async with connect(stack.live.url, additional_headers={"Authorization": f"Bearer {stack.api_key}"},
                       open_timeout=30, ping_interval=None, compression=None) as ws:
        new = await asyncio.to_thread(wait_for, lambda: set(stack.live.connections) - before, "the connection")
        yield ws, next(iter(new))


def _url(stack: Any, connection_id: str) -> str:
    return f"{stack.live.management_url}/@connections/{quote(connection_id, safe='')}"


def _forbidden(resp: requests.Response) -> None:
    assert resp.status_code == 403, (resp.status_code, resp.text[:300])
    assert resp.headers.get("x-amzn-ErrorType") == "ForbiddenException"
    assert resp.json()["message"]


async def _posted_by_the_live_function(stack: Any, ws: ClientConnection, connection_id: str) -> dict[str, Any]:
    """Post a marker frame as the live function (granted ManageConnections) and read the next
    frame the socket gets: the marker, unless a refused call got a frame through first."""
    def post() -> None:
        with stack.functions["LiveFunction"].acting():
            client = boto3.client("apigatewaymanagementapi", endpoint_url=stack.live.management_url)
            client.post_to_connection(ConnectionId=connection_id, Data=json.dumps({"type": "marker"}).encode())

    await asyncio.to_thread(post)
    frame: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
    return frame


def test_auth_local_management_api_refuses_unsigned_calls(stack: Any) -> None:
    async def scenario() -> dict[str, Any]:
        async with _connected(stack) as (ws, connection_id):
            url = _url(stack, connection_id)
            forged = json.dumps({"type": "events", "forged": True})
            for method, data in (("POST", forged), ("GET", None), ("DELETE", None)):
                _forbidden(await asyncio.to_thread(requests.request, method, url, data=data, timeout=10))
            assert connection_id in stack.live.connections  # the DELETE closed nothing
            return await _posted_by_the_live_function(stack, ws, connection_id)

    assert asyncio.run(scenario()) == {"type": "marker"}


def test_auth_local_management_api_refuses_a_signature_that_does_not_match(stack: Any) -> None:
    """A wrong secret, or a body other than the one signed (a replayed signature), is refused."""
    async def scenario() -> dict[str, Any]:
        async with _connected(stack) as (ws, connection_id):
            url = _url(stack, connection_id)
            signed = json.dumps({"type": "events", "signed": True})
            for secret, body in (("not-the-secret", signed), ("testing", json.dumps({"type": "events", "swapped": 1}))):
                request = AWSRequest(method="POST", url=url, data=signed.encode())
                SigV4Auth(Credentials("testing", secret, "testing"), "execute-api", "us-east-1").add_auth(request)
                headers = dict(request.headers.items())
                _forbidden(await asyncio.to_thread(requests.post, url, data=body.encode(), headers=headers,
                                                   timeout=10))
            return await _posted_by_the_live_function(stack, ws, connection_id)

    assert asyncio.run(scenario()) == {"type": "marker"}
