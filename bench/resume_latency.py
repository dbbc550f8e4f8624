"""Resume latency on the local stack, next to the floor of one bare SQS round trip on the same moto server.

What is timed, one resume at a time:

- resume -> worker: `time.perf_counter()` just before POST /v1/sessions/{id}/interrupts/{iid}/resume, and
  again inside the in-process worker when it receives the `interrupt.resumed` trigger. The path between:
  front end -> authorizer -> resume Lambda (read, conditional write, the wake message onto the FIFO work
  queue, then SendTaskSuccess, which ends the ParkBranch execution) -> SQS poller (long poll) -> engine
  Lambda (load, apply the wake in memory, deliver) -> worker; the engine commits the wake with the
  worker's answer after that (docs/ARCHITECTURE.md).
- resume POST: the same start, until the HTTP answer is back (the API-side part of the above).
- SQS floor: on a FIFO queue this script creates on the same moto server, `SendMessage` then a long-poll
  `ReceiveMessage` (and a `DeleteMessage` outside the timed part). One floor sample is taken right before
  each resume, so both see the same background (pollers idling on their long polls).

Every session is parked first by the seed worker (interrupt on `send_email`, ParkBranch RUNNING with its
task token stored on the interrupt item); a few warm-up sessions are parked and resumed before that and
not counted. After each resume the script waits for the session to be `done`, so resumes never overlap.

Everything is local: the moto server and the front end listen on 127.0.0.1.

    /work/main/.venv/bin/python bench/resume_latency.py [--n 200]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT / "local", ROOT / "layers" / "core", ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import boto3  # noqa: E402
import requests  # noqa: E402
from figures import figure  # noqa: E402

from holdpoint_local import FAKE_ENV  # noqa: E402

for _k, _v in FAKE_ENV.items():  # fake credentials before anything builds a boto3 client
    os.environ.setdefault(_k, _v)

from holdpoint_local.stack import LocalStack  # noqa: E402

WORKER_NAME = "bench_seed"
SCRIPT = [  # the seed's scripted model, as in tests/e2e
    {"when": {"role": "user", "contains": "say hi"}, "reply": {"content": "Hi!"}},
    {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "send_email", "arguments": {"to": "bob"}}]}},
    {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Email sent."}},
    {"when": {"role": "tool"}, "reply": {"content": "I did not send it."}},
]


# --------------------------------------------------------------------------- the worker


class SeedWorker:
    """The seed's `decide` as an in-process worker that timestamps every `interrupt.resumed` it gets."""

    def __init__(self) -> None:
        sys.path.insert(0, str(ROOT / "examples"))
        import seed_worker  # the seed, line for line

        self._decide = seed_worker.decide
        self.lock = threading.Lock()
        self.resumed_at: dict[str, float] = {}
        self.resumed_count: dict[str, int] = {}
        self.events: dict[str, threading.Event] = {}

    def expect(self, session_id: str) -> threading.Event:
        with self.lock:
            return self.events.setdefault(session_id, threading.Event())

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        trigger = request["trigger"]
        if trigger["type"] == "interrupt.resumed":
            now = time.perf_counter()
            sid = request["session_id"]
            with self.lock:
                self.resumed_at.setdefault(sid, now)
                self.resumed_count[sid] = self.resumed_count.get(sid, 0) + 1
                event = self.events.setdefault(sid, threading.Event())
            event.set()
        return self._decide(trigger, request.get("proposed") or {})


# --------------------------------------------------------------------------- where the time goes


class Timeline:
    """Every AWS request the process makes, stamped as it ends, with the thread that made it: the
    resume path's phases are read off it (the handlers run in this process on the local stack).
    Hooks go on boto3's default session before the stack starts, so every client built from it
    carries them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[float, str, str]] = []  # (end time, "service.Operation", thread name)
        boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        boto3.DEFAULT_SESSION.events.register("after-call", self._after)

    def _after(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        with self.lock:
            self.calls.append((time.perf_counter(), f"{service}.{operation}", threading.current_thread().name))

    def phases(self, t0: float, t_worker: float) -> dict[str, float] | None:
        """The resume path between `t0` (POST sent) and `t_worker` (the worker got the trigger),
        split where its requests end: None when a mark is missing. The resume's `SendTaskSuccess`
        runs while the engine works, so it is no mark: only the wake it sends first is."""
        with self.lock:
            window = [c for c in self.calls if t0 <= c[0] <= t_worker]
        engine = [c for c in window if c[2].startswith("poller-EngineFunction")]
        front = [c for c in window if not c[2].startswith("poller")]
        write = next((c[0] for c in front if c[1] == "dynamodb.UpdateItem"), None)
        sent = next((c[0] for c in front if c[1] == "sqs.SendMessage" and write is not None and c[0] > write), None)
        if write is None or sent is None:
            return None
        woke = next((c[0] for c in engine if c[0] > sent), None)
        if woke is None:
            return None
        out = {"1. POST to the resume's conditional write done (auth, parse, read, write)": write - t0,
               "2. then the wake message sent": sent - write,
               "3. then the engine's first request (SQS hop, poller)": woke - sent}
        commit = next((c[0] for c in engine if c[0] >= woke and c[1] == "dynamodb.TransactWriteItems"), None)
        if commit is None:  # the wake commits with the worker's answer, after the call
            read = max(c[0] for c in engine if c[0] >= woke)
            out["4. then the engine's session load done"] = read - woke
            out["5. then the worker has interrupt.resumed (apply the wake, build, deliver)"] = t_worker - read
        else:
            out["4. then the wake commit done (load, apply the wake, commit)"] = commit - woke
            out["5. then the worker has interrupt.resumed (load, build, deliver)"] = t_worker - commit
        return out


# --------------------------------------------------------------------------- the stack and a client


def start_stack(moto_log: str | None = None, parameters: dict[str, str] | None = None,
                tracing: bool = False, invoke: Literal["process", "sam"] = "process") -> LocalStack:
    """The bench's local stack; tracing off unless asked (the figures in bench/README.md (b),
    (d) were measured so), on for the soak, whose per-hop latencies come from the traces. `invoke`:
    the handlers in this process, or `sam build`'s artifact in containers (LocalStack's `invoke`)."""
    logging.basicConfig(level=logging.WARNING)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    for name in ("botocore", "urllib3", "werkzeug"):
        logging.getLogger(name).setLevel(logging.ERROR)
    stack = LocalStack(
        http_port=0,
        stack_name=f"bench{uuid.uuid4().hex[:6]}",
        moto_log=moto_log,
        parameters=parameters,
        extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
                   **({} if tracing else {"POWERTOOLS_TRACE_DISABLED": "1"})},
        invoke=invoke,
    )
    stack.start()
    assert stack.base_url.startswith(("http://127.0.0.1:", f"http://{stack.host}:")), stack.base_url
    assert str(stack.moto_endpoint).startswith("http://127.0.0.1:"), stack.moto_endpoint
    return stack


SERVER_ERRORS: Counter[str] = Counter()  # 5xx answers seen (and retried) by the bench's clients
_ERRORS_LOCK = threading.Lock()


def _route(path: str) -> str:
    words = {"v1", "sessions", "interrupts", "resume", "inputs", "events", "agents"}
    return "/".join(p if p in words or not p else "{id}" for p in path.split("?")[0].split("/"))


class Api:
    """A small HTTP client on the local front end (one requests.Session; close() when done)."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.base = stack.base_url
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {stack.api_key}"

    def close(self) -> None:
        self.http.close()

    def ok(self, method: str, path: str, body: Any = None, attempts: int = 4) -> Any:
        """One request; a 5xx is retried (as a client would) and counted in SERVER_ERRORS."""
        for attempt in range(attempts):
            resp = self.http.request(method, self.base + path, json=body, timeout=60)
            if resp.status_code < 500 or attempt == attempts - 1:
                break
            with _ERRORS_LOCK:
                SERVER_ERRORS[f"{method} {_route(path)} -> {resp.status_code}"] += 1
            time.sleep(0.2 * (attempt + 1))
        if resp.status_code not in (200, 202):
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
        return resp.json()

    def declare_agent(self) -> None:
        """PUT the agent, then set its in-process worker in the table (the API refuses `worker.python`)."""
        from holdpoint.aws.store import Store

        stored = self.ok("PUT", "/v1/agents/assistant", {
            "llm": {"provider": "scripted", "script": SCRIPT},
            "tools": [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}]})["agent"]
        Store(self.stack.env["TABLE_NAME"]).put_agent(self.stack.tenant, "assistant",
                                                      {**stored, "worker": {"python": WORKER_NAME}})

    def start(self) -> str:
        return self.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                 "message": {"role": "user", "content": "Email Bob"}})["session_id"]

    def view(self, sid: str) -> dict[str, Any]:
        return self.ok("GET", f"/v1/sessions/{sid}")

    def wait(self, sid: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60,
             interval: float = 0.05) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            view = self.view(sid)
            if check(view):
                return view
            if time.monotonic() > deadline:
                raise TimeoutError(f"session {sid}: last status {view['status']}")
            time.sleep(interval)

    def resume(self, sid: str, iid: str, payload: Any) -> dict[str, Any]:
        return self.ok("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": payload})


def setup(stack: LocalStack) -> SeedWorker:
    from holdpoint.outbound import workers
    worker = SeedWorker()
    workers.register(WORKER_NAME, worker)
    api = Api(stack)
    try:
        api.declare_agent()
    finally:
        api.close()
    return worker


# --------------------------------------------------------------------------- parking


def token_stored(ddb: Any, stack: LocalStack, sid: str, iid: str) -> bool:
    """The engine has stored ParkBranch's task token on the raise's park record (the execution
    is waiting)."""
    from holdpoint.aws.store import session_pk

    key = {"PK": {"S": session_pk(stack.tenant, sid)}}
    interrupt = ddb.get_item(TableName=stack.env["TABLE_NAME"], ConsistentRead=True,
                             Key={**key, "SK": {"S": f"I#{iid}"}}).get("Item") or {}
    generation = interrupt.get("generation", {}).get("N", "0")
    item = ddb.get_item(TableName=stack.env["TABLE_NAME"], ConsistentRead=True,
                        Key={**key, "SK": {"S": f"G#{iid}#{generation}"}}).get("Item")
    return bool(item and "task_token" in item)


def park_one(api: Api, ddb: Any, stack: LocalStack, timeout: float = 120) -> tuple[str, str]:
    """Start a seed session and wait until it is parked: interrupted, with the task token stored."""
    sid = api.start()
    view = api.wait(sid, lambda v: v["status"] == "interrupted", timeout=timeout, interval=0.1)
    [interrupt] = view["interrupts"]
    iid = interrupt["interrupt_id"]
    deadline = time.monotonic() + timeout
    while not token_stored(ddb, stack, sid, iid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"session {sid}: task token never stored")
        time.sleep(0.1)
    return sid, iid


MOTO_RSS_CAP_MIB = 6144.0  # a guard: stop parking past this moto server RSS


def moto_rss_mib(stack: LocalStack) -> float:
    with open(f"/proc/{stack.moto._proc.pid}/status") as fh:  # the child this stack started (read only)
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))


def park_many(stack: LocalStack, n: int, pool: int = 8, progress: bool = True) -> tuple[list[tuple[str, str]], float]:
    """Park n sessions with a small thread pool (each thread: create, then wait until parked).
    Returns the (session, interrupt) pairs and the wall time. The pool and its HTTP sessions are closed
    before returning, so none of their threads outlive the call. Stops early (fewer pairs) once the moto
    server's RSS passes MOTO_RSS_CAP_MIB, so a run cannot exhaust the machine's memory."""
    ddb = stack.client("dynamodb")
    local = threading.local()
    clients: list[Api] = []
    clients_lock = threading.Lock()
    done = [0]
    stopped = [False]

    def task(_: int) -> tuple[str, str] | None:
        if stopped[0] or moto_rss_mib(stack) > MOTO_RSS_CAP_MIB:
            stopped[0] = True
            return None
        api = getattr(local, "api", None)
        if api is None:
            api = local.api = Api(stack)
            with clients_lock:
                clients.append(api)
        out = park_one(api, ddb, stack)
        with clients_lock:
            done[0] += 1
            if progress and done[0] % 25 == 0:
                print(f"  parked {done[0]}/{n} ({time.perf_counter() - t0:.0f} s; moto RSS "
                      f"{moto_rss_mib(stack):.0f} MiB)", flush=True)
        return out

    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=pool, thread_name_prefix="bench-park") as executor:
            parked = [p for p in executor.map(task, range(n)) if p is not None]
    finally:
        for api in clients:
            api.close()
    if stopped[0]:
        print(f"  STOPPED EARLY: moto server RSS passed {MOTO_RSS_CAP_MIB:.0f} MiB after {len(parked)} of {n} "
              f"sessions", flush=True)
    return parked, time.perf_counter() - t0


def table_items(stack: LocalStack) -> int:
    """Items in the session table (a counting Scan; moto's ItemCount is not live)."""
    ddb = stack.client("dynamodb")
    total, start = 0, None
    while True:
        kwargs: dict[str, Any] = {"TableName": stack.env["TABLE_NAME"], "Select": "COUNT"}
        if start:
            kwargs["ExclusiveStartKey"] = start
        page = ddb.scan(**kwargs)
        total += page["Count"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return total


# --------------------------------------------------------------------------- statistics


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil
    return ordered[int(rank) - 1]


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f}"


# --------------------------------------------------------------------------- the SQS floor


class SqsFloor:
    """SendMessage then a long-poll ReceiveMessage on a FIFO queue of our own, on the same moto server."""

    def __init__(self, stack: LocalStack) -> None:
        import boto3
        from botocore.config import Config

        self.sqs = boto3.client("sqs", endpoint_url=stack.moto_endpoint, region_name=FAKE_ENV["AWS_REGION"],
                                aws_access_key_id="testing", aws_secret_access_key="testing",
                                config=Config(retries={"max_attempts": 1}, read_timeout=30))
        self.url = self.sqs.create_queue(QueueName=f"{stack.stack_name}-floor.fifo",
                                         Attributes={"FifoQueue": "true"})["QueueUrl"]
        self.count = 0

    def round_trip(self) -> float:
        self.count += 1
        body = f"floor-{self.count}"
        t0 = time.perf_counter()
        self.sqs.send_message(QueueUrl=self.url, MessageBody=body, MessageGroupId="floor",
                              MessageDeduplicationId=f"{body}-{uuid.uuid4().hex}")
        got = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=1, WaitTimeSeconds=10)
        elapsed = time.perf_counter() - t0
        [msg] = got["Messages"]
        assert msg["Body"] == body, msg["Body"]
        self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=msg["ReceiptHandle"])
        return elapsed


# --------------------------------------------------------------------------- main


def print_phases(phases: dict[str, list[float]]) -> None:
    if not phases:
        return
    print()
    print("Where resume -> worker goes (each phase ends when the request named ends; medians ms,"
          f" {min(len(v) for v in phases.values())} resumes with every mark):")
    for name, vals in phases.items():
        print(f"  {name:<78} {fmt_ms(statistics.median(vals))}  (p95 {fmt_ms(percentile(vals, 95)).strip()})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="resumes to time (default 200)")
    parser.add_argument("--warmup", type=int, default=5, help="sessions parked and resumed first, not counted")
    parser.add_argument("--pool", type=int, default=8, help="threads that park the sessions")
    args = parser.parse_args()
    if args.n < 1 or args.n > 5000:
        parser.error("--n must be in 1..5000")

    t_start = time.perf_counter()
    timeline = Timeline()
    stack = start_stack()
    try:
        worker = setup(stack)
        api = Api(stack)
        floor = SqsFloor(stack)
        print(f"local stack up: front end {stack.base_url}, moto {stack.moto_endpoint} "
              f"({time.perf_counter() - t_start:.1f} s)", flush=True)

        warm, t_warm = park_many(stack, args.warmup, pool=min(args.pool, args.warmup), progress=False)
        for sid, iid in warm:
            api.resume(sid, iid, {"approved": True})
            api.wait(sid, lambda v: v["status"] == "done", timeout=60, interval=0.02)
            floor.round_trip()
        print(f"warm-up: {len(warm)} sessions parked and resumed ({t_warm:.1f} s to park)", flush=True)

        parked, t_park = park_many(stack, args.n, pool=args.pool)
        print(f"parked {len(parked)} sessions in {t_park:.1f} s "
              f"({len(parked) / t_park:.1f}/s with {args.pool} threads)", flush=True)

        items_before = table_items(stack)
        floor_s: list[float] = []
        post_s: list[float] = []
        e2e_s: list[float] = []
        phases: dict[str, list[float]] = {}
        failures: list[str] = []
        t_runs = time.perf_counter()
        for i, (sid, iid) in enumerate(parked):
            floor_s.append(floor.round_trip())
            event = worker.expect(sid)
            t0 = time.perf_counter()
            answer = api.resume(sid, iid, {"approved": True})
            t_post = time.perf_counter()
            if answer.get("noop") is not False:
                failures.append(f"{sid}: resume answered {answer}")
                continue
            if not event.wait(60):
                failures.append(f"{sid}: worker never got interrupt.resumed")
                continue
            post_s.append(t_post - t0)
            e2e_s.append(worker.resumed_at[sid] - t0)
            for name, secs in (timeline.phases(t0, worker.resumed_at[sid]) or {}).items():
                phases.setdefault(name, []).append(secs)
            final = api.wait(sid, lambda v: v["status"] == "done", timeout=60, interval=0.02)
            if final["messages"][-1].get("content") != "Email sent.":
                failures.append(f"{sid}: ended with {final['messages'][-1]}")
            if (i + 1) % 50 == 0:
                print(f"  resumed {i + 1}/{len(parked)}", flush=True)
        t_runs = time.perf_counter() - t_runs
        api.close()
        items_after = table_items(stack)

        dup = {sid: c for sid, c in worker.resumed_count.items() if c != 1}
        print()
        print(f"Resume latency on the local stack, N = {len(e2e_s)} resumes, one at a time "
              f"(each preceded by one SQS floor sample); {t_runs:.1f} s for the timed loop")
        print()
        rows = [
            ("SQS floor: SendMessage + long-poll ReceiveMessage (FIFO, same moto)", floor_s),
            ("resume POST round trip (write + SendTaskSuccess, HTTP answer back)", post_s),
            ("resume POST -> worker receives interrupt.resumed", e2e_s),
        ]
        width = max(len(r[0]) for r in rows)
        print(f"| {'measurement':<{width}} | median ms | p95 ms   | min ms   | max ms   |")
        print(f"|{'-' * (width + 2)}|-----------|----------|----------|----------|")
        for name, vals in rows:
            if not vals:
                print(f"| {name:<{width}} | (no samples) |")
                continue
            print(f"| {name:<{width}} | {fmt_ms(statistics.median(vals))}  | {fmt_ms(percentile(vals, 95))} |"
                  f" {fmt_ms(min(vals))} | {fmt_ms(max(vals))} |")
        print_phases(phases)
        if e2e_s and floor_s:
            med_ratio = statistics.median(e2e_s) / statistics.median(floor_s)
            p95_ratio = percentile(e2e_s, 95) / percentile(floor_s, 95)
            print()
            print(f"ratio resume->worker / SQS floor: median {med_ratio:.1f}x, p95 {p95_ratio:.1f}x")
            figure(f"resume POST -> worker has interrupt.resumed, over the SQS floor in the same run (N={len(e2e_s)})",
                   f"median {statistics.median(e2e_s) * 1000:.1f} / {statistics.median(floor_s) * 1000:.1f} ms = "
                   f"{med_ratio:.1f}x, p95 {percentile(e2e_s, 95) * 1000:.1f} / "
                   f"{percentile(floor_s, 95) * 1000:.1f} ms = {p95_ratio:.1f}x", "<= 3x",
                   med_ratio <= 3 and p95_ratio <= 3)
        if len(e2e_s) >= 8:
            q = len(e2e_s) // 4
            first, last = fmt_ms(statistics.median(e2e_s[:q])).strip(), fmt_ms(statistics.median(e2e_s[-q:])).strip()
            floor_first = fmt_ms(statistics.median(floor_s[:q])).strip()
            floor_last = fmt_ms(statistics.median(floor_s[-q:])).strip()
            print(f"drift: resume->worker median of the first {q} resumes {first} ms, of the last {q} {last} ms;"
                  f" floor {floor_first} -> {floor_last} ms")
        print(f"moto server RSS at the end: {moto_rss_mib(stack):.0f} MiB")
        print(f"session table items: {items_before} when the timed loop began, {items_after} at its end")
        print(f"5xx answers retried by the bench's client: {dict(SERVER_ERRORS) or 0}")
        print(f"failures: {len(failures)}; sessions whose worker saw interrupt.resumed != 1 time: {len(dup)}")
        for line in failures[:10]:
            print("  " + line)
        print(f"total run time {time.perf_counter() - t_start:.1f} s")
        return 1 if failures or dup else 0
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
