"""Live events over the WebSocket API on the local stack, with the `websockets` client: a
subscriber gets the log after its `after_seq` and then every committed event as it is committed,
once and in order; a reconnect with `after_seq` loses nothing and repeats nothing; a post lost
between a commit and its post (a crash) shows as a gap at the next event, which the client fills
from the log; a long log comes one page per subscribe, paged on with `has_more`; a gone
connection (410) stops following; an idle subscriber holds no function."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from holdpoint.aws.connections import Connections
from holdpoint.services import live as live_service
from holdpoint.services.live import Live
from holdpoint_local.emulators.wsgateway import IDLE_SECS
from holdpoint_local.live_client import Follower
from tests.stack import Api, declare_agent
from tests.waiting import wait_for

INPUT = {"type": "client.message", "message": {"role": "user", "content": "say hi again"}}


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))  # type: ignore[arg-type]


async def collect(follower: Follower, sid: str, through: int) -> list[int]:
    """The seqs the follower hands over for `sid` until it has `through`."""
    seqs: list[int] = []
    while not seqs or seqs[-1] < through:
        got_sid, event = await follower.next()
        assert got_sid == sid
        seqs.append(int(event["seq"]))
    return seqs


async def subscribed(follower: Follower) -> None:
    """Wait (on the loop) for the follower's first `subscribed` frame."""
    while not follower.subscribed:
        await asyncio.sleep(0.01)


def settled(api: Api, sid: str) -> int:
    """Wait for the session's turn to end; the last seq of its log."""
    api.wait_status(sid, "done")
    return int(api.events(sid)[-1]["seq"])


def test_live_subscriber_gets_the_log_then_each_event_as_it_is_committed(stack: Any, api: Api) -> None:
    sid = api.start("say hi")
    first = settled(api, sid)

    async def scenario() -> tuple[list[int], list[int], Follower]:
        async with Follower(stack.live.url, stack.api_key) as follower:
            await follower.follow(sid, 0)
            caught_up = await collect(follower, sid, first)
            await asyncio.to_thread(api.ok, "POST", f"/v1/sessions/{sid}/inputs", INPUT)
            last = await asyncio.to_thread(settled, api, sid)
            live = await collect(follower, sid, last)
            return caught_up, live, follower

    caught_up, live, follower = run(scenario())
    assert caught_up == list(range(1, first + 1))
    assert live == list(range(first + 1, live[-1] + 1))
    assert [e["seq"] for e in api.events(sid)] == caught_up + live
    assert not follower.errors and follower.subscribed[0]["through_seq"] >= first


def test_live_reconnect_with_after_seq_loses_nothing_and_repeats_nothing(stack: Any, api: Api) -> None:
    sid = api.start("say hi")
    first = settled(api, sid)
    middle = first // 2

    async def scenario() -> list[int]:
        async with Follower(stack.live.url, stack.api_key) as before:
            await before.follow(sid, 0)
            seen = (await collect(before, sid, middle))[:middle]
        await asyncio.to_thread(api.ok, "POST", f"/v1/sessions/{sid}/inputs", INPUT)  # while disconnected
        async with Follower(stack.live.url, stack.api_key) as after:
            await after.follow(sid, seen[-1])
            last = await asyncio.to_thread(settled, api, sid)
            return seen + await collect(after, sid, last)

    seqs = run(scenario())
    assert seqs == [e["seq"] for e in api.events(sid)]


def test_live_crash_between_commit_and_post_shows_a_gap_the_client_fills(stack: Any, api: Api,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Crash injection: the process that commits the next events dies before it posts them (the
    post never happens). The session's next event shows the gap and the client fills it from the log."""
    sid = api.start("say hi")
    first = settled(api, sid)
    real = Live.publish
    lost: list[list[int]] = []

    def crashing(self: Live, state: Any) -> None:
        if state.header.session_id == sid and not lost:
            lost.append([e.seq for e in state.events])  # committed; the process dies before its post
            return
        real(self, state)

    async def scenario() -> tuple[list[int], Follower]:
        async with Follower(stack.live.url, stack.api_key) as follower:
            await follower.follow(sid, first)
            await subscribed(follower)
            monkeypatch.setattr(Live, "publish", crashing)
            await asyncio.to_thread(api.ok, "POST", f"/v1/sessions/{sid}/inputs", INPUT)
            last = await asyncio.to_thread(settled, api, sid)
            return await collect(follower, sid, last), follower

    seqs, follower = run(scenario())
    assert lost and lost[0][0] == first + 1
    assert seqs == [e["seq"] for e in api.events(sid)][first:]
    assert follower.gaps >= 1


def test_live_a_gone_connection_stops_following(stack: Any, api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_disconnect(conn: Any) -> None:  # API Gateway may lose a socket without running $disconnect
        return None

    monkeypatch.setattr(stack.live, "_disconnect", no_disconnect)
    sid = api.start("say hi")
    first = settled(api, sid)
    connections = Connections()

    async def scenario() -> None:
        async with Follower(stack.live.url, stack.api_key) as follower:
            await follower.follow(sid, first)
            await subscribed(follower)
            assert len(connections.following("dev", sid)) == 1

    run(scenario())  # the socket is gone, its subscription item stays: the next post is a 410
    assert len(connections.following("dev", sid)) == 1
    api.ok("POST", f"/v1/sessions/{sid}/inputs", INPUT)
    settled(api, sid)
    wait_for(lambda: connections.following("dev", sid) == [], "the gone connection to stop following", 30)


def test_live_idle_subscribers_hold_no_function(stack: Any, api: Api) -> None:
    sid = api.start("say hi")
    first = settled(api, sid)

    async def scenario(check: Callable[[], dict[str, int]]) -> tuple[dict[str, int], dict[str, int]]:
        earlier = set(stack.live.connections)
        followers = [Follower(stack.live.url, stack.api_key) for _ in range(20)]
        for follower in followers:
            await follower.__aenter__()
            await follower.follow(sid, first)
        for follower in followers:
            await subscribed(follower)
        ours = set(stack.live.connections) - earlier
        while check()["in_flight"]:  # the session's last steps (the notifier's stream record) finish
            await asyncio.sleep(0.01)
        before = check()
        # Ten minutes less a second of idleness pass at the gateway's sweep: nothing is closed, nothing runs.
        quiet_since = min(stack.live.connections[c].last_active for c in ours)
        closed = await asyncio.to_thread(stack.live.sweep, quiet_since + IDLE_SECS - 1, ours)
        after = check()
        assert closed == []
        for follower in followers:
            await follower.__aexit__()
        return before, after

    def counts() -> dict[str, int]:
        return {**{name: fn.invocations for name, fn in stack.functions.items()},
                "in_flight": sum(fn.in_flight for fn in stack.functions.values())}

    before, after = run(scenario(counts))
    assert before == after and before["LiveFunction"] >= 40 and after["in_flight"] == 0


def test_live_gateway_closes_a_connection_idle_for_ten_minutes_and_disconnect_stops_it_following(
        stack: Any, api: Api) -> None:
    """API Gateway's idle timeout, as the local gateway applies it: the socket is closed (1001),
    `$disconnect` runs, and the connection's subscription items are deleted."""
    sid = api.start("say hi")
    first = settled(api, sid)
    connections = Connections()

    async def scenario() -> int | None:
        earlier = set(stack.live.connections)
        async with Follower(stack.live.url, stack.api_key) as follower:
            await follower.follow(sid, first)
            await subscribed(follower)
            assert len(connections.following("dev", sid)) == 1
            [ours] = [c for c in stack.live.connections if c not in earlier]
            closed = await asyncio.to_thread(stack.live.sweep, time.time() + IDLE_SECS + 1, {ours})
            assert closed == [ours]
            assert follower.ws is not None
            await follower.ws.wait_closed()
            return follower.ws.close_code

    assert run(scenario()) == 1001
    wait_for(lambda: connections.following("dev", sid) == [], "$disconnect to delete the subscription", 30)


STREAMED = " ".join(f"token{i}" for i in range(60)) + "."


def test_live_stream_deltas_of_a_reply_then_its_committed_message(stack: Any, api: Api,
                                                                  worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Issue 23 item 3: a follower gets the scripted reply's text as `delta` frames (index 0, 1, ..),
    the committed assistant message, and one `delta_end` `finished`; the deltas add up to the message."""
    script = [{"when": {"role": "user", "contains": "stream"}, "reply": {"content": STREAMED}},
              {"reply": {"content": "Hi!"}}]
    declare_agent(api, worker[0], llm={"provider": "scripted", "script": script})
    sid = api.start("say hi")
    first = settled(api, sid)

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with Follower(stack.live.url, stack.api_key) as follower:
            await follower.follow(sid, first)
            await subscribed(follower)
            await asyncio.to_thread(api.ok, "POST", f"/v1/sessions/{sid}/inputs",
                                    {"type": "client.message", "message": {"role": "user", "content": "stream it"}})
            frames: list[dict[str, Any]] = []
            while not frames or frames[-1]["type"] != "delta_end":
                frames.append((await asyncio.wait_for(follower.deltas.get(), 60))[1])
            last = await asyncio.to_thread(settled, api, sid)
            events = []
            while not events or int(events[-1]["seq"]) < last:
                events.append((await follower.next())[1])
            return frames, events

    frames, events = run(scenario())
    deltas, end = frames[:-1], frames[-1]
    [call_id] = {f["call_id"] for f in frames}
    assert deltas and [f["index"] for f in deltas] == list(range(len(deltas)))
    assert all(f["session_id"] == sid and f["type"] == "delta" for f in deltas)
    assert end == {"type": "delta_end", "session_id": sid, "call_id": call_id, "reason": "finished"}
    [added] = [e["data"] for e in events if e["type"] == "message.added" and e["data"].get("role") == "assistant"]
    assert added["call_id"] == call_id  # the committed message of the streamed call
    [message] = [m for m in api.view(sid)["messages"] if m.get("id") == added["message_id"]]
    assert "".join(f["text"] for f in deltas) == STREAMED == message["content"]


@pytest.mark.parametrize("fmt", [None, "ag-ui"])
def test_live_a_catch_up_in_pages_loses_nothing_and_repeats_nothing(stack: Any, api: Api, fmt: str | None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One subscribe sends one page of the log; the client follows `has_more` from the last seq it has."""
    monkeypatch.setattr(live_service, "MAX_CATCH_UP", 2)
    sid = api.start("say hi")
    last = settled(api, sid)

    async def scenario() -> tuple[list[int], Follower]:
        async with Follower(stack.live.url, stack.api_key, fmt=fmt) as follower:
            await follower.follow(sid, 0)
            seqs = await collect(follower, sid, last) if fmt is None else []
            while not follower.subscribed or follower.subscribed[-1]["has_more"]:
                await asyncio.sleep(0.01)
            return seqs, follower

    seqs, follower = run(scenario())
    assert [f["after_seq"] for f in follower.subscribed] == list(range(0, last + 1, 2))
    if fmt is None:
        assert seqs == [e["seq"] for e in api.events(sid)] and follower.duplicates == 0
    else:
        positions = [tuple(p) for f in follower.agui for p in f["positions"]]
        assert positions == sorted(set(positions)) and positions[-1][0] <= last
