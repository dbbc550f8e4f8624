"""The WebSocket API is authorized only at `$connect` (docs/SECURITY.md, "Live events"): a client
token past its `exp`, or an API key revoked since, must not keep the connection's powers. Its next
subscribe is refused (`unauthorized`) and the connection closed; a token's subscriptions end at
its `exp`, and an API key's after ten minutes unless a subscribe (the keep-alive) renews them
after checking the key again."""

from __future__ import annotations

import asyncio
from typing import Any

import requests

from holdpoint.aws.connections import Connections
from holdpoint.aws.keys import put_api_key, revoke_api_key
from holdpoint.ports import ApiKey
from holdpoint.services.caller import Caller
from holdpoint.services.live import Live
from holdpoint.services.tokens import mint_client_token
from holdpoint_local.live_client import Follower
from holdpoint_local.memory.frames import MemoryFrames
from tests.stack import Api
from tests.waiting import wait_for

NOW = 1_800_000_000.0


def _secret(stack: Any) -> str:
    secret: str = stack.client("secretsmanager").get_secret_value(SecretId=stack.env["JWT_SECRET_ARN"])["SecretString"]
    return secret


def _refused_over_http(stack: Any, token: str) -> bool:
    r = requests.get(stack.base_url + "/v1/sessions", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return r.status_code in (401, 403)


async def _answered(follower: Follower) -> None:
    while not follower.subscribed and not follower.errors:
        await asyncio.sleep(0.01)


async def _refused_and_closed(follower: Follower, sid: str) -> tuple[list[str], int | None]:
    """Subscribe to `sid`: the error codes answered, and the close code once the gateway closed it."""
    await follower.follow(sid, 0)
    await _answered(follower)
    assert follower.ws is not None
    await asyncio.wait_for(follower.ws.wait_closed(), 30)
    return [e["error"]["code"] for e in follower.errors], follower.ws.close_code


def test_revocation_an_expired_client_token_cannot_subscribe_over_its_open_connection(stack: Any, api: Api) -> None:
    secret = _secret(stack)
    short = mint_client_token(secret, "dev", "alice", ttl_secs=8)
    alice = Api(stack.base_url, mint_client_token(secret, "dev", "alice"))

    async def scenario() -> tuple[tuple[list[str], int | None], list[dict[str, Any]], str]:
        async with Follower(stack.live.url, short, query_token=True) as follower:
            # the token expires: the HTTP API refuses it now (a signal, not a sleep)
            await asyncio.to_thread(wait_for, lambda: _refused_over_http(stack, short), "token expiry", 60)
            later = await asyncio.to_thread(alice.start, "say hi")  # a session made after the expiry
            await asyncio.to_thread(alice.wait_status, later, "done")
            return await _refused_and_closed(follower, later), follower.subscribed, later

    (codes, close_code), subscribed, later = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert codes == ["unauthorized"] and subscribed == [] and close_code is not None
    assert Connections().following("dev", later) == []


def test_revocation_a_revoked_api_key_cannot_subscribe_over_its_open_connection(stack: Any, api: Api) -> None:
    key = "hp_soon_revoked_key_123"
    put_api_key(stack.env["TABLE_NAME"], key, "dev", "contractor", "operator")
    sid = api.start("say hi")
    api.wait_status(sid, "done")

    async def scenario() -> tuple[tuple[list[str], int | None], Follower]:
        async with Follower(stack.live.url, key) as follower:
            assert revoke_api_key(stack.env["TABLE_NAME"], key)
            assert _refused_over_http(stack, key)
            return await _refused_and_closed(follower, sid), follower

    (codes, close_code), follower = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert codes == ["unauthorized"] and close_code is not None
    assert follower.ready.empty() and follower.subscribed == []
    assert Connections().following("dev", sid) == []


class _Store:
    def __init__(self, key_active: bool = True) -> None:
        self.key_active = key_active
        self.key_reads = 0

    def session_exists(self, tenant: str, sid: str, owner: Any = None) -> bool:
        return True

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        self.key_reads += 1
        return ApiKey("t", "k", "operator") if self.key_active else None

    def events(self, tenant: str, sid: str, after: int, limit: int) -> list[Any]:
        return []


class _Connections:
    def __init__(self) -> None:
        self.ends: list[int] = []

    def subscribe(self, tenant: str, sid: str, cid: str, expires: int, fmt: str = "events") -> bool:
        self.ends.append(expires)
        return True


def _subscribe(caller: Caller, store: _Store | None = None) -> tuple[_Store, _Connections, MemoryFrames]:
    store, connections, frames = store or _Store(), _Connections(), MemoryFrames()
    live = Live(store, connections, frames, clock=lambda: NOW)  # type: ignore[arg-type]
    live.subscribe(caller, "c1", NOW - 60, {"s1": 0})
    return store, connections, frames


def test_revocation_a_tokens_subscription_ends_at_its_exp_not_two_hours_after_connecting() -> None:
    caller = Caller("t", "alice", "client", own_only=True, expires=int(NOW) + 30)
    _, connections, frames = _subscribe(caller)
    assert connections.ends == [int(NOW) + 30] and frames.closed == []


def test_revocation_a_keys_subscription_lasts_ten_minutes_and_each_subscribe_reads_the_key() -> None:
    store, connections, _ = _subscribe(Caller("t", "k", "operator", key_hash="h" * 64))
    assert connections.ends == [int(NOW) + 600] and store.key_reads == 1


def test_revocation_a_subscribe_past_exp_or_with_a_revoked_key_is_refused_and_closed() -> None:
    for caller, store in ((Caller("t", "alice", "client", own_only=True, expires=int(NOW)), None),
                          (Caller("t", "k", "operator", key_hash="h" * 64), _Store(key_active=False))):
        _, connections, frames = _subscribe(caller, store)
        assert connections.ends == [] and frames.closed == ["c1"]
        assert [f["error"]["code"] for f in frames.received("c1")] == ["unauthorized"]
