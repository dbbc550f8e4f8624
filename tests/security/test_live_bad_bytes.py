"""Bad bytes on the WebSocket API (docs/SECURITY.md, "Everyone vs the API's parser"): a message is
parsed as strictly as an HTTP body (`holdpoint.core.strictjson` behind the edge's size and depth
limits), so JSON nested deeper than Python's parser goes (10 KB, 5,000 deep) or with a duplicate
key is an `error` frame naming the field, never a function error, and the local gateway routes
such a message to `$default` as API Gateway does instead of dropping the socket."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holdpoint.http import live
from holdpoint_local.live_client import Follower
from holdpoint_local.memory.frames import MemoryFrames
from tests.stack import Api

DEEP = '{"action": "subscribe", "x": ' + "[" * 5000 + "]" * 5000 + "}"  # 10 KB, under every size limit
DUPLICATE = '{"action": "subscribe", "session_ids": ["ses_a"], "session_ids": ["ses_b"]}'


def test_bad_bytes_live_deep_or_duplicate_key_messages_are_error_frames_and_the_connection_stays(
        stack: Any, api: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with Follower(stack.live.url, stack.api_key) as follower:
            assert follower.ws is not None
            for raw in (DEEP, DUPLICATE):
                await follower.ws.send(raw)
            while len(follower.errors) < 2:
                await asyncio.sleep(0.01)
            await follower.follow(sid, 0)  # the same connection still answers
            while not follower.subscribed:
                await asyncio.sleep(0.01)
            return follower.errors, follower.subscribed

    errors, subscribed = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert [(e["error"]["code"], e["error"]["param"]) for e in errors] == [("invalid_request", "body")] * 2
    assert subscribed[0]["session_id"] == sid


class _Live:
    def __init__(self) -> None:
        self.frames = MemoryFrames()


@pytest.mark.parametrize(("body", "param"), [("[" * 5000 + "]" * 5000, "body"), (DEEP, "body"), (DUPLICATE, "body"),
                                             ('{"action": "subscribe", "x": NaN}', "x")])
def test_bad_bytes_live_function_answers_a_message_it_cannot_parse_strictly_with_400(
        monkeypatch: pytest.MonkeyPatch, body: str, param: str) -> None:
    fake = _Live()
    monkeypatch.setattr(live, "get_live", lambda: fake)
    event = {"requestContext": {"routeKey": "$default", "connectionId": "c1", "authorizer": {"tenant": "t"}},
             "body": body}
    assert live.handle(event) == {"statusCode": 400}
    # the twin posts the frame's JSON, so a frame that is not plain JSON fails here
    assert [(f["type"], f["error"]["code"], f["error"]["param"]) for f in fake.frames.received("c1")] == [
        ("error", "invalid_request", param)]
