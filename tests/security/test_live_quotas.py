"""Quotas of the WebSocket API (docs/SECURITY.md, "Live events"): every commit posts to each
connection that follows the session, in the committing process, so the followers of one session
and the open connections of one caller are bounded (template parameters
`QuotaLiveFollowersPerSession`, `QuotaLiveConnectionsPerCaller`); a re-subscribe counts once, and
a closed connection gives its slots back. One subscribe message reads at most one page of the log
per session it names, however long the log, and the clients page on with `has_more`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from holdpoint.aws.connections import Connections
from holdpoint.core.state import Event
from holdpoint.http.subscribe import Subscribe
from holdpoint.services.caller import Caller
from holdpoint.services.live import Live
from holdpoint.services.tokens import mint_client_token
from holdpoint_local.live_client import Follower
from holdpoint_local.memory.frames import MemoryFrames
from tests.stack import Api, declare_agent
from tests.waiting import wait_for


@pytest.fixture
def limited(local_stack_factory: Callable[..., Any], worker: tuple[str, Any]) -> Callable[..., tuple[Any, Api]]:
    """A stack with quota parameters of its own, and the tenant's API client on it."""

    def start(**parameters: int) -> tuple[Any, Api]:
        stack = local_stack_factory(
            parameters={name: str(value) for name, value in parameters.items()},
            extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})
        api = Api(stack.base_url, stack.api_key)
        declare_agent(api, worker[0])
        return stack, api

    return start


def _token(stack: Any, subject: str) -> str:
    secret = stack.client("secretsmanager").get_secret_value(SecretId=stack.env["JWT_SECRET_ARN"])["SecretString"]
    return mint_client_token(secret, "dev", subject)


async def _answer(follower: Follower, sid: str) -> dict[str, Any]:
    """Subscribe to `sid`: the frame that answers (`subscribed` or `error`)."""
    ok, refused = len(follower.subscribed), len(follower.errors)
    await follower.follow(sid, 0)
    while len(follower.subscribed) == ok and len(follower.errors) == refused:
        await asyncio.sleep(0.01)
    return follower.errors[-1] if len(follower.errors) > refused else follower.subscribed[-1]


def test_quota_live_followers_of_one_session_stop_at_the_limit_and_a_closed_one_frees_its_slot(
        limited: Callable[..., tuple[Any, Api]]) -> None:
    stack, _ = limited(QuotaLiveFollowersPerSession=2)
    token = _token(stack, "mallory")
    sid = Api(stack.base_url, token).start("say hi")
    Api(stack.base_url, token).wait_status(sid, "done")
    connections = Connections()

    async def scenario() -> tuple[list[str], dict[str, Any], list[str], str]:
        async with Follower(stack.live.url, token) as one, Follower(stack.live.url, token) as two, \
                Follower(stack.live.url, token) as three:
            first = [(await _answer(f, sid))["type"] for f in (one, two)]
            refused = await _answer(three, sid)
            again = [(await _answer(f, sid))["type"] for f in (one, two)]  # a re-subscribe counts once
            await one.__aexit__()
            await asyncio.to_thread(wait_for, lambda: len(connections.following("dev", sid)) == 1,
                                    "the closed connection's slot to be given back", 30,
                                    describe=lambda: connections.following("dev", sid))
            return first, refused, again, (await _answer(three, sid))["type"]

    first, refused, again, after_close = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert first == ["subscribed", "subscribed"] and again == ["subscribed", "subscribed"]
    assert refused["type"] == "error" and refused["session_id"] == sid
    assert refused["error"]["code"] == "quota_exceeded" and refused["error"]["param"] == "session_ids"
    assert refused["limit"] == "live_followers_per_session"
    assert after_close == "subscribed"


def test_quota_live_connections_of_one_caller_stop_at_the_limit_and_others_still_connect(
        limited: Callable[..., tuple[Any, Api]]) -> None:
    stack, _ = limited(QuotaLiveConnectionsPerCaller=2)
    token = _token(stack, "mallory")
    sid = Api(stack.base_url, token).start("say hi")
    Api(stack.base_url, token).wait_status(sid, "done")

    async def scenario() -> tuple[int, str]:
        async with Follower(stack.live.url, token) as one, Follower(stack.live.url, token):
            with pytest.raises(InvalidStatus) as refused:
                async with Follower(stack.live.url, token):
                    pass
            async with Follower(stack.live.url, _token(stack, "bob")) as bob:  # another caller
                bob_answer = (await _answer(bob, sid))["error"]["code"]  # not bob's session: connected, walled
            await one.__aexit__()
            assert one.ws is not None
            await one.ws.wait_closed()

            async def connects() -> bool:
                try:
                    async with Follower(stack.live.url, token):
                        return True
                except InvalidStatus:
                    return False

            loop = asyncio.get_running_loop()
            await asyncio.to_thread(wait_for, lambda: asyncio.run_coroutine_threadsafe(connects(), loop).result(30),
                                    "a closed connection to give its slot back", 30)
            return refused.value.response.status_code, bob_answer

    status, bob_answer = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert status == 429 and bob_answer == "not_found"


class _LongLog:
    """A session store whose sessions each have `length` events."""

    def __init__(self, length: int) -> None:
        self.length, self.queries, self.events_read = length, 0, 0

    def session_exists(self, tenant: str, sid: str, owner: Any = None) -> bool:
        return True

    def events(self, tenant: str, sid: str, after: int, limit: int) -> list[Event]:
        self.queries += 1
        out = [Event(seq=s, type="x", at="", data={"t": "y" * 200})
               for s in range(after + 1, min(after + limit, self.length) + 1)]
        self.events_read += len(out)
        return out


class _Connections:
    def subscribe(self, *args: Any) -> bool:
        return True


CALLER = Caller(tenant="t", subject="u", origin="client", own_only=True)


def test_quota_live_one_subscribe_message_reads_one_page_per_session_however_often_sent() -> None:
    store, frames = _LongLog(10_000), MemoryFrames()
    live = Live(store, _Connections(), frames)  # type: ignore[arg-type]
    raw = json.dumps({"action": "subscribe", "session_ids": [f"ses_{i:024d}" for i in range(10)], "after_seq": 0})
    for _ in range(2):  # the same message again: the sessions are followed already
        live.subscribe(CALLER, "c", 0, Subscribe.model_validate(json.loads(raw)).after())
    assert store.queries == 2 * 10 and store.events_read <= 2 * 10 * 100
    done = [f for f in frames.received("c") if f["type"] == "subscribed"]
    assert len(done) == 20 and all(f["has_more"] and f["through_seq"] == 100 for f in done)


def test_quota_live_paging_on_has_more_gets_every_event_once() -> None:
    store, frames = _LongLog(250), MemoryFrames()
    live = Live(store, _Connections(), frames)  # type: ignore[arg-type]
    after, messages = 0, 0
    while True:
        messages += 1
        live.subscribe(CALLER, "c", 0, {"s1": after})
        done = frames.received("c")[-1]
        after = done["through_seq"]
        if not done["has_more"]:
            break
    seqs = [e["seq"] for f in frames.received("c") if f["type"] == "events" for e in f["events"]]
    assert seqs == list(range(1, 251)) and messages == 3
