"""The WebSocket API's walls (docs/SECURITY.md, "Live events"): `$connect` takes the same API keys
and client tokens as the HTTP API and nothing else; a subscribe to another tenant's session, or
to another end user's, is answered `not_found` as over HTTP and records nothing; a client token
bound to one session follows only that one; a streamed reply's deltas reach only the connections
that follow the session."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from holdpoint.aws.connections import Connections
from holdpoint.services.tokens import mint_client_token
from holdpoint_local.live_client import Follower
from tests.stack import Api, declare_agent


def _secret(stack: Any) -> str:
    secret: str = stack.client("secretsmanager").get_secret_value(SecretId=stack.env["JWT_SECRET_ARN"])["SecretString"]
    return secret


def answers(stack: Any, token: str | None, sid: str, *, query_token: bool = False,
            fmt: str | None = None) -> tuple[list[int], list[str]]:
    """Subscribe with `token` from seq 0 (in `fmt`): (the seqs the log sent, the error codes answered)."""

    async def scenario() -> tuple[list[int], list[str]]:
        async with Follower(stack.live.url, token, query_token=query_token, fmt=fmt) as follower:
            await follower.follow(sid, 0)
            while not follower.subscribed and not follower.errors:
                await asyncio.sleep(0.01)
            seqs = []
            while not follower.ready.empty():
                seqs.append(int((await follower.next())[1]["seq"]))
            seqs += sorted({p[0] for f in follower.agui for p in f["positions"]})
            return seqs, [e["error"]["code"] for e in follower.errors]

    result: tuple[list[int], list[str]] = asyncio.run(asyncio.wait_for(scenario(), 60))
    return result


@pytest.mark.parametrize("fmt", [None, "ag-ui"])
def test_tenant_wall_another_tenants_session_cannot_be_subscribed_to(stack: Any, api: Api, other_tenant: Api,
                                                                     fmt: str | None) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    seqs, errors = answers(stack, "hp_other_tenant_key", sid, fmt=fmt)
    assert (seqs, errors) == ([], ["not_found"])
    assert Connections().following("other", sid) == [] and Connections().following("dev", sid) == []
    assert answers(stack, stack.api_key, sid, fmt=fmt)[0]  # the owner's tenant does follow it


def test_end_user_a_client_token_follows_only_its_own_sessions(stack: Any, api: Api) -> None:
    secret = _secret(stack)
    alice = Api(stack.base_url, mint_client_token(secret, "dev", "alice"))
    mine = alice.start("say hi")
    theirs = api.start("say hi")
    alice.wait_status(mine, "done")
    api.wait_status(theirs, "done")
    alice_token = mint_client_token(secret, "dev", "alice")
    assert answers(stack, alice_token, theirs) == ([], ["not_found"])
    assert answers(stack, alice_token, mine)[0]
    bound = mint_client_token(secret, "dev", "alice", session_id=mine)
    assert answers(stack, bound, mine, query_token=True)[0]  # a browser's `?token=`
    other_of_alice = alice.start("say hi")
    assert answers(stack, bound, other_of_alice) == ([], ["not_found"])


def test_tenant_wall_another_tenants_connection_gets_no_deltas(stack: Any, api: Api, other_tenant: Api,
                                                               worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Another tenant's connection that asked for the session (refused) gets none of its reply's
    `delta` frames, which the owner's follower gets."""
    script = [{"reply": {"content": "secret plans " * 20}}]
    declare_agent(api, worker[0], llm={"provider": "scripted", "script": script})
    sid = api.start("hello")
    api.wait_status(sid, "done")

    async def scenario() -> tuple[list[str], list[str], int]:
        async with Follower(stack.live.url, stack.api_key) as owner, \
                Follower(stack.live.url, "hp_other_tenant_key") as other:
            await other.follow(sid, 0)
            await owner.follow(sid, 0)
            while not owner.subscribed or not other.errors:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(api.ok, "POST", f"/v1/sessions/{sid}/inputs",
                                    {"type": "client.message", "message": {"role": "user", "content": "again"}})
            kinds: list[str] = []
            while not kinds or kinds[-1] != "delta_end":
                kinds.append((await asyncio.wait_for(owner.deltas.get(), 60))[1]["type"])
            return kinds, [e["error"]["code"] for e in other.errors], other.deltas.qsize()

    kinds, errors, leaked = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert "delta" in kinds and errors == ["not_found"] and leaked == 0


@pytest.mark.parametrize("token", [None, "hp_not_a_key", "not-a-jwt.at.all"])
def test_connect_without_a_valid_credential_is_refused(stack: Any, token: str | None) -> None:
    async def scenario() -> int:
        try:
            async with Follower(stack.live.url, token):
                return 101
        except InvalidStatus as exc:
            return int(exc.response.status_code)

    assert asyncio.run(scenario()) == 403
    assert stack.functions["LiveFunction"].invocations == 0  # `$connect` never ran
