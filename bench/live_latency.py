"""Live events over the WebSocket API against the long-poll, on the local stack, in one run:

- commit -> client: an interrupt raised (`POST /v1/sessions/{id}/interrupts`, one
  `session.interrupted` event) while a client follows the session, from the end of the raise's
  commit (its TransactWriteItems, read off a hook on every AWS call this process makes) to the
  client having the event: over the WebSocket (the commit's own process posts it) and over the
  JSON long-poll (`GET .../events?wait=25`, bench/event_stream.py's loop), N events each;
  the ratio of the medians against its target (the WebSocket at least 4x lower);
- first token -> client: N streamed replies (the scripted provider, word by word) while a client
  follows the session, from the provider handing its first token to the engine (a hook on the
  provider's `on_delta` in this process) to the client having the `delta` frame that carries it;
- idle subscribers: `--subscribers` WebSocket clients following sessions, then an idle window in
  which the function invocations of the whole stack are counted (the target is 0);
- the cost of a thousand subscriber-hours, each way, from AWS list prices (bench/cost_model.py's).

    .venv/bin/python bench/live_latency.py [--n 200] [--subscribers 1000] [--idle-secs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cost_model  # noqa: E402
import event_stream as es  # noqa: E402
import resume_latency as rl  # noqa: E402
from figures import figure  # noqa: E402

from holdpoint_local.live_client import KEEPALIVE_SECS, Follower  # noqa: E402

TARGET_RATIO = 4.0
P = cost_model.PRICES
WS_CONNECTION_MINUTE = 0.25 / 1e6
WS_MESSAGE = 1.00 / 1e6  # per message (32 KB increment), first billion a month
LONG_POLL_SECS = 25.0
LONG_POLL_RRU = 52.0  # an idle 25 s wait: 103 Queries of 0.5 RRU (bench/README.md (f))
API_MEMORY_GB = 0.5
LIVE_MS = 30.0  # a keep-alive subscribe's duration in the live function (local runs measure ~10-30 ms)


class Loop:
    """An asyncio loop in a thread, for the WebSocket clients beside the bench's blocking HTTP calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 600) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def ws_delays(stack: Any, loop: Loop, n: int, timeline: rl.Timeline) -> list[float]:
    """`n` interrupts raised while a WebSocket client follows the session: end of commit -> client."""
    producer = rl.Api(stack)
    arrived: dict[str, float] = {}
    signal = threading.Condition()
    delays: list[float] = []
    shared: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    follower: Follower | None = None

    async def consume() -> None:
        while True:
            _, event = await shared.get()
            if event["type"] == "session.interrupted":
                with signal:
                    arrived[event["data"]["interrupt_id"]] = time.perf_counter()
                    signal.notify_all()

    consumer = asyncio.run_coroutine_threadsafe(consume(), loop.loop)
    try:
        i = 0
        while len(delays) < n and i < 3 * n:  # a raise whose commit the Timeline cannot single out is not counted
            if i % es.PER_SESSION == 0:
                sid = producer.start()
                producer.wait(sid, lambda v: v["status"] == "interrupted", timeout=60)
                if follower is not None:  # a connection per session: one follows at most 20
                    loop.run(follower.__aexit__())
                follower = Follower(stack.live.url, stack.api_key)
                follower.ready = shared
                loop.run(follower.__aenter__())
                loop.run(follower.follow(sid, es._last_seq(producer, sid)))
            iid = f"bench-ws-{i}"
            t0 = time.perf_counter()
            producer.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "bench", "interrupt_id": iid,
                                                                   "global": True})
            t1 = time.perf_counter()
            with signal:
                assert signal.wait_for(lambda name=iid: name in arrived, 60), f"websocket: no frame for {iid}"
            end = es.commit_end(timeline, t0, t1)
            if end is not None:
                delays.append(arrived[iid] - end)
            i += 1
            if i % 50 == 0:
                print(f"  websocket: {len(delays)}/{n} ({i} raised)", flush=True)
    finally:
        consumer.cancel()
        if follower is not None:
            loop.run(follower.__aexit__())
        producer.close()
    return delays


STREAM_REPLY = " ".join(f"token{i}" for i in range(50)) + "."


def declare_streamer(stack: Any) -> None:
    """The agent `streamer`: the seed's in-process worker, a scripted reply of 51 words to any message."""
    from holdpoint.aws.store import Store

    api = rl.Api(stack)
    try:
        stored = api.ok("PUT", "/v1/agents/streamer", {
            "llm": {"provider": "scripted", "script": [{"reply": {"content": STREAM_REPLY}}]}})["agent"]
    finally:
        api.close()
    Store(stack.env["TABLE_NAME"]).put_agent(stack.tenant, "streamer", {**stored, "worker": {"python": rl.WORKER_NAME}})


def first_token_delays(stack: Any, loop: Loop, n: int) -> list[float]:
    """`n` streamed replies while a WebSocket client follows: the provider's first token -> the client's delta."""
    from holdpoint import llm
    from holdpoint.llm.call import LlmCall

    handed: dict[str, float] = {}
    scripted = llm.STREAMERS["scripted"]

    def timed(call: LlmCall, on_delta: Any) -> Any:
        def first(text: str) -> bool:
            handed.setdefault(call.call_id, time.perf_counter())
            return bool(on_delta(text))

        return scripted(call, first)

    async def first_delta(follower: Follower) -> tuple[float, str]:
        arrived: tuple[float, str] | None = None
        while True:
            at, frame = await follower.deltas.get()
            if frame["type"] == "delta" and arrived is None:
                arrived = (at, frame["call_id"])
            if frame["type"] == "delta_end":
                assert arrived is not None and frame["reason"] == "finished", frame
                return arrived

    api, delays, follower = rl.Api(stack), [], None
    llm.STREAMERS["scripted"] = timed
    try:
        for i in range(n):
            if i % es.PER_SESSION == 0:
                sid = api.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": "streamer",
                                                       "message": {"role": "user", "content": "hello"}})["session_id"]
                api.wait(sid, lambda v: v["status"] == "done", timeout=60)
                if follower is not None:
                    loop.run(follower.__aexit__())
                follower = Follower(stack.live.url, stack.api_key)
                loop.run(follower.__aenter__())
                loop.run(follower.follow(sid, es._last_seq(api, sid)))
            assert follower is not None
            api.ok("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.message",
                                                          "message": {"role": "user", "content": f"again {i}"}})
            at, call_id = loop.run(first_delta(follower), timeout=60)
            delays.append(at - handed[call_id])
            api.wait(sid, lambda v: v["status"] == "done", timeout=60)
    finally:
        llm.STREAMERS["scripted"] = scripted
        if follower is not None:
            loop.run(follower.__aexit__())
        api.close()
    return delays


PER_CALLER = 100
"""template.yaml's QuotaLiveConnectionsPerCaller default: one caller's open connections at most."""


def watcher_keys(stack: Any, count: int) -> list[str]:
    """An API key for every `PER_CALLER` subscribers: each principal keeps within its share of
    connections (a share per principal), as that many watchers would."""
    from holdpoint.aws.keys import put_api_key

    keys = [stack.api_key]
    for j in range(1, -(-count // PER_CALLER)):
        key = f"hp_bench_watcher_{j}_{time.monotonic_ns()}"
        put_api_key(stack.env["TABLE_NAME"], key, stack.tenant, f"watcher-{j}", "client")
        keys.append(key)
    return keys


def idle_subscribers(stack: Any, loop: Loop, count: int, idle_secs: float) -> dict[str, Any]:
    """`count` WebSocket subscribers (over 10 sessions, at most `PER_CALLER` a principal), then an
    idle window: the stack's invocations in it."""
    api = rl.Api(stack)
    sessions = []
    for _ in range(10):
        sid = api.start()
        api.wait(sid, lambda v: v["status"] == "interrupted", timeout=60)
        sessions.append(sid)
    api.close()
    keys = watcher_keys(stack, count)
    followers = [Follower(stack.live.url, keys[i // PER_CALLER]) for i in range(count)]
    t0 = time.perf_counter()

    async def open_all() -> None:
        sem = asyncio.Semaphore(50)

        async def one(i: int, follower: Follower) -> None:
            async with sem:
                await follower.__aenter__()
                await follower.follow(sessions[i % len(sessions)], 0)
                while not follower.subscribed:
                    await asyncio.sleep(0.01)

        await asyncio.gather(*(one(i, f) for i, f in enumerate(followers)))

    loop.run(open_all(), timeout=1800)
    connected = time.perf_counter() - t0
    before = {name: fn.invocations for name, fn in stack.functions.items()}
    in_flight_before = sum(fn.in_flight for fn in stack.functions.values())
    time.sleep(idle_secs)  # the bench, not a test: the idle window is the measurement
    after = {name: fn.invocations for name, fn in stack.functions.items()}
    in_flight = sum(fn.in_flight for fn in stack.functions.values())
    open_now = len(stack.live.connections)

    async def close_all() -> None:
        await asyncio.gather(*(f.__aexit__() for f in followers))

    loop.run(close_all(), timeout=600)
    return {"count": count, "open": open_now, "connect_secs": connected, "idle_secs": idle_secs,
            "invocations": sum(after.values()) - sum(before.values()), "in_flight": max(in_flight, in_flight_before)}


def cost_per_thousand_hours() -> tuple[dict[str, float], dict[str, float]]:
    """USD per 1,000 idle subscriber-hours: the WebSocket (connection minutes, a keep-alive subscribe
    every 5 minutes and its `subscribed` frame, the live function and its table reads and writes)
    and the long-poll (an API function held 25 s of every 25, its requests, the authorizer, its Queries)."""
    hours = 1000.0
    keepalives = hours * 3600 / KEEPALIVE_SECS
    ws = {
        "connection minutes": hours * 60 * WS_CONNECTION_MINUTE,
        "messages (subscribe in, subscribed out)": keepalives * 2 * WS_MESSAGE,
        "live function requests": keepalives * P["lambda_request"],
        "live function compute": keepalives * LIVE_MS / 1000 * API_MEMORY_GB * P["lambda_gb_second_arm64"],
        "table (2 WRU + 2 RRU a subscribe)": keepalives * (2 * P["ddb_wru"] + 2 * P["ddb_rru"]),
    }
    polls = hours * 3600 / LONG_POLL_SECS
    lp = {
        "api function compute (held)": hours * 3600 * API_MEMORY_GB * P["lambda_gb_second_arm64"],
        "http api + api function + authorizer requests": polls * (P["http_api_request"] + 2 * P["lambda_request"]),
        "table (Queries, wait leases)": polls * (LONG_POLL_RRU * P["ddb_rru"] + 4 * P["ddb_wru"]),
    }
    return ws, lp


def summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), rl.percentile(values, 95)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="events per way (default 200)")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--idle-secs", type=float, default=10.0)
    args = parser.parse_args()
    timeline = rl.Timeline()
    stack = rl.start_stack()
    loop = Loop()
    try:
        rl.setup(stack)
        print(f"local stack up: {stack.base_url}, websocket {stack.live.url}", flush=True)
        es.stream_delays(stack, 5, "json", timeline)  # warm-up, not counted
        ws_delays(stack, loop, 5, timeline)
        ws = ws_delays(stack, loop, args.n, timeline)
        lp: list[float] = []
        es.stream_delays(stack, args.n, "json", timeline, committed=lp)
        declare_streamer(stack)
        first_token_delays(stack, loop, 3)  # warm-up, not counted
        tokens = first_token_delays(stack, loop, args.n)
        idle = idle_subscribers(stack, loop, args.subscribers, args.idle_secs)
    finally:
        loop.stop()
        stack.stop()
    (ws_med, ws_p95), (lp_med, lp_p95), (tk_med, tk_p95) = summary(ws), summary(lp), summary(tokens)
    print("\n| commit -> client | N | median ms | p95 ms |\n|---|---|---|---|")
    print(f"| WebSocket (PostToConnection after the commit) | {len(ws)} | {rl.fmt_ms(ws_med)} | {rl.fmt_ms(ws_p95)} |")
    print(f"| JSON long-poll (`wait=25`) | {len(lp)} | {rl.fmt_ms(lp_med)} | {rl.fmt_ms(lp_p95)} |")
    print(f"| first token from the provider -> client (`delta` frame, WebSocket) | {len(tokens)} | "
          f"{rl.fmt_ms(tk_med)} | {rl.fmt_ms(tk_p95)} |")
    ratio = lp_med / ws_med if ws_med > 0 else float("inf")
    print()
    figure("commit -> client, long-poll median / WebSocket median (issue 23)",
           f"{ratio:.1f}x ({rl.fmt_ms(lp_med).strip()} / {rl.fmt_ms(ws_med).strip()} ms)",
           f">= {TARGET_RATIO:g}x", ratio >= TARGET_RATIO)
    print(f"idle subscribers: {idle['open']} of {idle['count']} connected in {idle['connect_secs']:.1f} s")
    figure(f"function invocations while {idle['count']} WebSocket subscribers idle {idle['idle_secs']:g} s (issue 23)",
           f"{idle['invocations']} (in flight {idle['in_flight']})", "0",
           idle["invocations"] == 0 and idle["in_flight"] == 0 and idle["open"] == idle["count"])
    ws_cost, lp_cost = cost_per_thousand_hours()
    print("\n| per 1,000 idle subscriber-hours | USD |\n|---|---|")
    for name, usd in ws_cost.items():
        print(f"| WebSocket: {name} | {usd:.4f} |")
    print(f"| **WebSocket total** | **{sum(ws_cost.values()):.4f}** |")
    for name, usd in lp_cost.items():
        print(f"| long-poll: {name} | {usd:.4f} |")
    print(f"| **long-poll total** | **{sum(lp_cost.values()):.4f}** |")
    print(f"(prices: {cost_model.PRICES_AS_OF}; WebSocket $0.25 per million connection minutes, "
          "$1 per million messages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
