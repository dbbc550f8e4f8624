"""Event-stream delay on the local stack: from an event being committed to a waiting client having it,
over the SSE stream and the JSON long-poll, printed beside the resume latency measured in the same run.

What is timed, one event at a time:

- A client waits: `GET /v1/sessions/{id}/events/stream?after_seq=N` (or `GET .../events?after_seq=N&wait=25`),
  started a random 50-1000 ms before the event, so the server's poll backoff (50 ms, x1.5, at most 250 ms) is
  sampled at every phase.
- The event: `POST /v1/sessions/{id}/interrupts` raises an interrupt (one `session.interrupted` event), ten per
  session (a seed session parked on `send_email` first), so no partition grows past a few dozen items.
- Delay, two ways: from the end of the event's commit (the API function's TransactWriteItems, read off a
  hook on every AWS call this process makes; the handlers run in it on the local stack) to the client
  having the whole answer; and from the event's `at`, which the writer stamps before its load and commit
  (ms resolution), so that one includes the commit itself.
- Idle cost: the DynamoDB Query calls one request makes while waiting the full cap with no event.
- Resume latency, for comparison: `POST .../resume` -> the worker has `interrupt.resumed`, as
  bench/resume_latency.py measures it (fewer samples: `--resumes`).

    /work/main/.venv/bin/python bench/event_stream.py [--n 200] [--resumes 50]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import resume_latency as rl  # noqa: E402 - the stack, the seed worker, parking and statistics, shared


def at_epoch(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


PER_SESSION = 10
"""Events raised on one session before the next: DynamoDB reads a key range, the emulator filters
every item of the partition, so a session with hundreds of events would time moto, not Holdpoint."""


class Waiter:
    """One waiting request in a thread; `got` is (time the answer was whole, its events)."""

    def __init__(self, api: rl.Api, sid: str, after: int, route: str) -> None:
        self.got: tuple[float, list[dict[str, Any]]] | None = None
        self.received = 0.0  # perf_counter, to compare with the Timeline's commit
        self.thread = threading.Thread(target=self._wait, args=(api, sid, after, route), daemon=True)
        self.thread.start()

    def _wait(self, api: rl.Api, sid: str, after: int, route: str) -> None:
        if route == "sse":
            resp = api.http.get(f"{api.base}/v1/sessions/{sid}/events/stream", params={"after_seq": after}, timeout=60)
            events = sse_events(resp.text)
        else:
            resp = api.http.get(f"{api.base}/v1/sessions/{sid}/events", params={"after_seq": after, "wait": 25},
                                timeout=60)
            events = resp.json()["events"]
        self.received = time.perf_counter()
        self.got = (time.time(), events)


def commit_end(timeline: rl.Timeline, t0: float, t1: float) -> float | None:
    """When the raise's commit (the API function's TransactWriteItems between t0 and t1) ended."""
    with timeline.lock:
        ends = [c[0] for c in timeline.calls if t0 <= c[0] <= t1 and c[1] == "dynamodb.TransactWriteItems"
                and not c[2].startswith("poller")]
    return ends[-1] if len(ends) == 1 else None


def found_at(timeline: rl.Timeline, committed: float, received: float) -> float | None:
    """When the waiter's Query that found the event ended: its last Query before the answer (the
    engine's pollers excluded; nothing else queries while the producer waits for the answer)."""
    with timeline.lock:
        ends = [c[0] for c in timeline.calls if committed <= c[0] <= received and c[1] == "dynamodb.Query"
                and not c[2].startswith("poller")]
    return ends[-1] if ends else None


def stream_delays(stack: Any, n: int, route: str, timeline: rl.Timeline, committed: list[float] | None = None,
                  phases: dict[str, list[float]] | None = None) -> list[float]:
    """`n` events, each raised while a client of `route` waits; the delay of each from the event's
    `at`; and, in `committed`, from the end of its commit (where the Timeline shows exactly one)."""
    producer, client = rl.Api(stack), rl.Api(stack)
    delays: list[float] = []
    try:
        for i in range(n):
            if i % PER_SESSION == 0:  # a fresh partition now and then: moto's Query scans a whole one
                sid = producer.start()
                producer.wait(sid, lambda v: v["status"] == "interrupted", timeout=60)
            after = _last_seq(producer, sid)
            waiter = Waiter(client, sid, after, route)
            time.sleep(random.uniform(0.05, 1.0))  # the bench, not a test: sample every phase of the backoff
            iid = f"bench-{route}-{i}"
            t0 = time.perf_counter()
            producer.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "bench", "interrupt_id": iid,
                                                                   "global": True})
            t1 = time.perf_counter()
            while True:  # another event first (rare): wait on from it, as a client would
                waiter.thread.join(60)
                assert waiter.got is not None, f"{route}: no answer for event {i}"
                received, events = waiter.got
                mine = [e for e in events if e["type"] == "session.interrupted" and e["data"]["interrupt_id"] == iid]
                if mine:
                    break
                waiter = Waiter(client, sid, max([after, *(e["seq"] for e in events)]), route)
            delays.append(received - at_epoch(mine[0]["at"]))
            end = commit_end(timeline, t0, t1)
            if committed is not None and end is not None:
                committed.append(waiter.received - end)
                found = found_at(timeline, end, waiter.received)
                if phases is not None and found is not None:
                    phases.setdefault("commit done -> the waiter's Query that finds it done", []).append(found - end)
                    phases.setdefault("then the answer built and back at the client", []).append(
                        waiter.received - found)
            if (i + 1) % 50 == 0:
                print(f"  {route}: {i + 1}/{n}", flush=True)
    finally:
        producer.close()
        client.close()
    return delays


def _last_seq(api: rl.Api, sid: str) -> int:
    after = 0
    while True:
        page = api.ok("GET", f"/v1/sessions/{sid}/events?after_seq={after}&limit=500")
        after = page["next_after_seq"]
        if not page["has_more"]:
            return after


def idle_queries(stack: Any, timeline: rl.Timeline) -> tuple[int, float]:
    """DynamoDB Query calls of one stream request that waits the whole cap (no event), and its length."""
    api = rl.Api(stack)
    sid = api.start()
    api.wait(sid, lambda v: v["status"] == "interrupted", timeout=60)
    last = _last_seq(api, sid)
    t0 = time.perf_counter()
    resp = api.http.get(f"{api.base}/v1/sessions/{sid}/events/stream", params={"after_seq": last}, timeout=60)
    t1 = time.perf_counter()
    assert resp.status_code == 200 and not sse_events(resp.text), resp.text
    api.close()
    with timeline.lock:  # the API function's calls; the engine's pollers idle on SQS
        queries = [c for c in timeline.calls if t0 <= c[0] <= t1 and c[1] == "dynamodb.Query"
                   and not c[2].startswith("poller")]
    return len(queries), t1 - t0


def resume_latencies(stack: Any, worker: rl.SeedWorker, m: int) -> list[float]:
    """POST resume -> the worker has `interrupt.resumed`, one at a time (bench/resume_latency.py's loop)."""
    parked, _ = rl.park_many(stack, m, pool=2, progress=False)
    api = rl.Api(stack)
    out: list[float] = []
    try:
        for sid, iid in parked:
            event = worker.expect(sid)
            t0 = time.perf_counter()
            api.resume(sid, iid, {"approved": True})
            if event.wait(60):
                out.append(worker.resumed_at[sid] - t0)
            api.wait(sid, lambda v: v["status"] == "done", timeout=60, interval=0.02)
    finally:
        api.close()
    return out


def row(name: str, values: list[float]) -> str:
    if not values:
        return f"| {name} | (no samples) |"
    median, p95 = rl.fmt_ms(statistics.median(values)), rl.fmt_ms(rl.percentile(values, 95))
    return f"| {name} | {len(values)} | {median} | {p95} | {rl.fmt_ms(min(values))} | {rl.fmt_ms(max(values))} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="events per route (default 200)")
    parser.add_argument("--resumes", type=int, default=50, help="resumes timed for the comparison (default 50)")
    parser.add_argument("--no-idle", action="store_true", help="skip the 25 s idle-cost sample")
    args = parser.parse_args()
    random.seed(7)
    t_start = time.perf_counter()
    timeline = rl.Timeline()  # hooks on boto3's default session before the stack builds its clients
    stack = rl.start_stack()
    try:
        worker = rl.setup(stack)
        print(f"local stack up: {stack.base_url} ({time.perf_counter() - t_start:.1f} s)", flush=True)
        stream_delays(stack, 5, "sse", timeline)  # warm-up, not counted
        rows = ["| measurement | N | median ms | p95 ms | min ms | max ms |", "|---|---|---|---|---|---|"]
        for route, name in (("sse", "SSE stream"), ("json", "JSON long-poll (`wait=25`)")):
            committed: list[float] = []
            phases: dict[str, list[float]] = {}
            from_at = stream_delays(stack, args.n, route, timeline, committed, phases)
            rows.append(row(f"{name}: commit done -> waiting client has the event", committed))
            for phase, values in phases.items():
                rows.append(row(f"  {phase}", values))
            rows.append(row(f"{name}: event `at` (before its commit) -> waiting client has it", from_at))
            print("\n".join(rows[-2 - len(phases):]), flush=True)
        try:
            resumes = resume_latencies(stack, worker, args.resumes)
        except Exception as exc:  # noqa: BLE001 - the stream figures above still stand
            print(f"resume comparison failed: {exc!r}", flush=True)
            resumes = []
        rows.append(row("for comparison: resume POST -> worker has interrupt.resumed", resumes))
        idle = None if args.no_idle else idle_queries(stack, timeline)
        print()
        print("Event-stream delay on the local stack: the event's `at` (stamped just before its commit) -> "
              "the waiting client has the answer")
        print()
        print("\n".join(rows))
        if idle is not None:
            print()
            print(f"idle cost: one stream request with no event waited {idle[1]:.1f} s and made {idle[0]} "
                  f"DynamoDB Query calls (plus one GetItem to check the session)")
        print(f"5xx answers retried by the bench's client: {dict(rl.SERVER_ERRORS) or 0}")
        print(f"total run time {time.perf_counter() - t_start:.1f} s")
        return 0
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
