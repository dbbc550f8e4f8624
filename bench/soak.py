"""Soak: the whole approval flow under sustained, open-loop load on the local stack, over HTTP,
optionally with AWS refusals and killed invocations injected while it runs; what it promises is
checked at the end from the table and the worker's own log, not from the API's answers.

Sessions arrive at `--rate` a second (Poisson) for `--duration` seconds. Each does what an
approval session does: a turn whose `send_email` call the seed worker interrupts, the approval
resumed after a human-like delay, the turn ending "Email sent.". Shares of them also take the
harder paths (`--mix`): duplicate and concurrent resumes, an edit that branches away from the
parked question and back, an interrupt left to expire, a quorum of two approvers, and a follower on
the WebSocket API from start to end.
The sessions are driven from a process of their own, so the stack's process (every handler, the
front end, the pollers and the in-process worker) is measured without them.

`--invoke sam` runs every function as `sam build` built it, in its container (the local stack's
INVOKE=sam), with the worker over signed HTTP on Docker's bridge; `--container-kills S` then kills
the engine's or the notifier's container while it runs an invocation, about every S s. The
in-process injectors (`--faults`, `--kills`) act on this process's AWS calls, so they do not apply
there, nor the spend meter, nor the per-hop spans (the containers' hops do not reach the local X-Ray).

Invariants (each a line `INVARIANT name: held|BROKEN (detail)`):
- every session reached its expected final state (its messages, read from the table);
- every `interrupt.resumed` decision reached the worker once per decision id (a redelivery of the
  same id is counted apart: it is at-least-once, and the worker deduplicates on it), and every tool
  ran once (one tool message in the session);
- no interrupt of a soak session is left open in the table;
- every follower got each event of its session once, in the table's order;
- no 5xx answer;
- the table's items per session are the same for every session of a kind.

Figures (`FIGURE` lines, bench/figures.py): achieved against offered rate; p50/p95/p99 of submit ->
interrupt visible, resume -> worker, and commit -> WebSocket; each long-lived process's RSS and
open descriptors over the run with their slope per thousand sessions. Per hop (api, engine kick,
engine park, resume, engine wake, and the waits between them), p50/p95/p99 from the spans of the
first plain sessions' traces, read back with `GET /v1/sessions/{id}/trace`.
Spend (`Spend`): DynamoDB write units, AWS calls and invocations per session while it runs, beside
bench/capacity.py's model of one plain approval session (`--mix plain=1` to compare like with like).

    .venv/bin/python bench/soak.py [--rate 2] [--duration 600] [--faults 0.01] [--kills 0.002]
    .venv/bin/python bench/soak.py --knee 1,2,4,8 --duration 60      # step the rate up
    .venv/bin/python bench/soak.py --rate 1 --duration 30 --hog 4 --waits-total 2   # waits beside serving
    .venv/bin/python bench/soak.py --invoke sam --rate 0.05 --duration 900 --container-kills 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import threading
import time
import tracemalloc
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT / "bench", ROOT / "local", ROOT / "layers" / "core", ROOT / "examples", ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import requests  # noqa: E402
from figures import figure  # noqa: E402
from resume_latency import SCRIPT, start_stack  # noqa: E402

KINDS = ("plain", "duplicate", "branch", "expire", "quorum", "follow")
DEFAULT_MIX = "plain=0.55,duplicate=0.1,branch=0.1,expire=0.08,quorum=0.09,follow=0.08"
WORKER = "soak_seed"
EXPIRES_SECS = 3
JUDGED = 300
"""A slope per thousand sessions means something only over a few hundred of them (warm-up and
caches fill first)."""
RETRIED = (409, 429, 503)
"""Answers a client retries after a pause (a lost race, a quota, AWS refusing): not failures."""


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- the worker's own log


class Worker:
    """The seed's `decide`, in process, logging every decision it is handed (a redelivery of a
    decision id shows as a second entry) and when each `interrupt.resumed` arrived."""

    def __init__(self) -> None:
        import seed_worker

        self.decide = seed_worker.decide
        self.lock = threading.Lock()
        self.log: list[tuple[str, str, str]] = []  # (session, decision id, trigger type)
        self.resumed_at: dict[str, float] = {}

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        trigger = request["trigger"]
        with self.lock:
            self.log.append((request["session_id"], request["decision_id"], trigger["type"]))
            if trigger["type"] == "interrupt.resumed":
                self.resumed_at.setdefault(request["session_id"], time.perf_counter())
        out: dict[str, Any] = self.decide(trigger, request.get("proposed") or {}, request.get("calls")) or {}
        return out


# --------------------------------------------------------------------------- HTTP


@dataclass
class Http:
    """The soak's client: retries what a client retries, counts every 5xx (an invariant)."""

    base: str
    key: str
    long_poll: bool = False
    patience: float = 120.0
    """How long a session may take to reach a status (longer in containers, where a killed
    invocation's messages come back after the queue's visibility timeout, 120 s)."""
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def call(self, method: str, path: str, body: Any = None, key: str | None = None,
             ok: tuple[int, ...] = (200, 202)) -> Any:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        for attempt in range(30):
            resp = requests.request(method, self.base + path, json=body, headers=headers, timeout=60)
            if resp.status_code >= 500:
                with self.lock:
                    self.errors[f"{method} {path.split('?')[0].rsplit('/', 1)[-1]} {resp.status_code}"] += 1
            if resp.status_code in ok:
                return resp.json()
            if resp.status_code not in RETRIED and resp.status_code < 500:
                raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
            time.sleep(min(2.0, 0.1 * (attempt + 1)))
        raise RuntimeError(f"{method} {path}: still {resp.status_code} after 30 tries")

    def until(self, sid: str, statuses: str, timeout: float | None = None) -> dict[str, Any]:
        """The view once its status is one of `statuses`: with `long_poll`, the API's `?until=`
        long-poll (each wait holds an API function instance: docs/CAPACITY.md, "Under sustained
        load"); otherwise a plain read every 250 ms."""
        deadline = time.monotonic() + (timeout or self.patience)
        while True:
            query = f"?until={statuses}&wait=20" if self.long_poll else ""
            view = self.call("GET", f"/v1/sessions/{sid}{query}")
            if view["status"] in statuses.split(","):
                return dict(view)
            if time.monotonic() > deadline:
                raise TimeoutError(f"session {sid} stayed {view['status']}, wanted {statuses}")
            if not self.long_poll:
                time.sleep(0.25)


# --------------------------------------------------------------------------- one session


@dataclass
class Outcome:
    kind: str
    session_id: str = ""
    submitted: float = 0.0
    visible: float | None = None
    resumed: float | None = None
    finished: float | None = None
    error: str | None = None
    followed: list[int] | None = None
    lags: list[float] = field(default_factory=list)


class Sessions:
    """The session flows; each returns its outcome (an exception becomes `error`)."""

    def __init__(self, http: Http, keys: dict[str, str], live_url: str | None, rng: random.Random,
                 delay: tuple[float, float]) -> None:
        self.http, self.keys, self.live_url, self.rng, self.delay = http, keys, live_url, rng, delay

    def start(self, out: Outcome, agent: str = "assistant") -> str:
        out.submitted = time.perf_counter()
        sid = str(self.http.call("POST", "/v1/sessions", {
            "type": "client.message", "agent_id": agent,
            "message": {"role": "user", "content": "Email Bob that the report is ready"}})["session_id"])
        out.session_id = sid
        return sid

    def parked(self, out: Outcome, sid: str) -> str:
        view = self.http.until(sid, "interrupted")
        out.visible = time.perf_counter()
        return str(view["interrupts"][0]["interrupt_id"])

    def think(self) -> None:
        time.sleep(self.rng.uniform(*self.delay))

    def resume(self, out: Outcome, sid: str, iid: str, key: str | None = None) -> Any:
        out.resumed = out.resumed or time.perf_counter()
        return self.http.call("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume",
                              {"payload": {"approved": True}}, key=key)

    def run(self, kind: str) -> Outcome:
        out = Outcome(kind)
        try:
            getattr(self, kind)(out)
        except Exception as exc:  # noqa: BLE001 - a failed session is a finding, reported at the end
            out.error = f"{type(exc).__name__}: {exc}"[:300]
        out.finished = time.perf_counter()
        return out

    def plain(self, out: Outcome) -> None:
        sid = self.start(out)
        iid = self.parked(out, sid)
        self.think()
        self.resume(out, sid, iid)
        self.http.until(sid, "done")

    def duplicate(self, out: Outcome) -> None:
        sid = self.start(out)
        iid = self.parked(out, sid)
        self.think()
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: self.resume(out, sid, iid), range(3)))
        answers.append(self.resume(out, sid, iid))
        if sum(1 for a in answers if a.get("noop") is False) != 1:
            raise AssertionError(f"not exactly one resume took effect: {answers}")
        self.http.until(sid, "done")

    def branch(self, out: Outcome) -> None:
        sid = self.start(out)
        iid = self.parked(out, sid)
        view = self.http.call("GET", f"/v1/sessions/{sid}")
        first, anchor = view["message_tree"]["nodes"][0]["message"]["id"], view["interrupts"][0]["anchor"]
        self.http.call("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.messages", "messages": [
            {"role": "user", "content": "Actually, just say hi"}]})
        self.http.until(sid, "done")
        self.http.call("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.messages", "messages": [
            {"id": first, "role": "user"}, {"id": anchor, "role": "assistant"}]})
        self.http.until(sid, "interrupted")
        self.think()
        self.resume(out, sid, iid)
        self.http.until(sid, "done")

    def expire(self, out: Outcome) -> None:
        sid = self.start(out, "assistant-expiring")
        self.parked(out, sid)
        self.http.until(sid, "done", timeout=EXPIRES_SECS + self.http.patience)

    def quorum(self, out: Outcome) -> None:
        sid = self.start(out, "assistant-quorum")
        iid = self.parked(out, sid)
        self.think()
        first = self.resume(out, sid, iid, key=self.keys["ann"])
        if first.get("status") != "open":
            raise AssertionError(f"the first of two approvals decided: {first}")
        self.resume(out, sid, iid, key=self.keys["bob"])
        self.http.until(sid, "done")

    def follow(self, out: Outcome) -> None:
        if not self.live_url:
            raise RuntimeError("no WebSocket API")
        asyncio.run(self._follow(out))

    async def _follow(self, out: Outcome) -> None:
        from holdpoint.core.state import epoch
        from holdpoint_local.live_client import Follower

        async with Follower(self.live_url or "", self.http.key) as follower:
            sid = await asyncio.to_thread(self.start, out)
            await follower.follow(sid, 0)
            seqs: list[int] = []
            loop = asyncio.get_running_loop()
            task = loop.run_in_executor(None, self.plain_rest, out, sid)
            while True:
                try:
                    _, event = await follower.next(timeout=120)
                except TimeoutError:
                    break
                seqs.append(int(event["seq"]))
                out.lags.append(time.time() - epoch(event["at"]))
                if event["type"] == "turn.finished":
                    break
            await task
            out.followed = seqs

    def plain_rest(self, out: Outcome, sid: str) -> None:
        iid = self.parked(out, sid)
        self.think()
        self.resume(out, sid, iid)
        self.http.until(sid, "done")


# --------------------------------------------------------------------------- processes


class MemoryTrace:
    """`--trace-memory N`: where the stack process's memory grows. tracemalloc runs from the start; one
    snapshot is taken once N sessions have finished (the warm caches full, every function
    started), another at the end, and the growth between them is summed by who holds it: the
    package, the local stack, the soak's worker (which logs every decision), and the libraries.
    The sessions' driver runs in a process of its own (`drive`), so none of this is the driver's."""

    AREAS = (("holdpoint package (layers/)", "/layers/core/holdpoint/"), ("local stack (local/)", "/local/"),
             ("the soak's worker and its log (bench/)", "/bench/"), ("tests/", "/tests/"))

    def __init__(self) -> None:
        self.after: int | None = None
        self.first: tuple[int, tracemalloc.Snapshot] | None = None

    SITES = 12
    """Allocation lines listed by their growth."""

    def start(self, after: int, frames: int = 1) -> None:
        """`frames` kept per allocation: 1 names the line that allocated; more find, past the
        standard library's and the libraries' frames, the code that asked (16 made the stack
        process CPU-bound on a 2-core machine)."""
        self.after = after
        tracemalloc.start(frames)

    def holder(self, traceback: tracemalloc.Traceback) -> str:
        """The area of the innermost frame that is the package's, the local stack's or the
        worker's; the libraries' when no frame is (their own threads and caches)."""
        for frame in reversed(traceback):  # innermost first (tracemalloc keeps the oldest call first)
            for name, part in self.AREAS:
                if part in frame.filename:
                    return name
        return "libraries and the standard library alone"

    def sample(self, done: int) -> None:
        if self.after is not None and self.first is None and done >= self.after:
            self.first = (done, tracemalloc.take_snapshot())

    def report(self, done: int) -> None:
        if self.first is None:
            if self.after is not None:
                print(f"  memory by holder: fewer than {self.after} sessions finished, no snapshot")
            return
        since, first = self.first
        grown: Counter[str] = Counter()
        sites: Counter[str] = Counter()
        diffs = tracemalloc.take_snapshot().compare_to(first, "traceback")
        for diff in diffs:
            grown[self.holder(diff.traceback)] += diff.size_diff
            where = diff.traceback[-1]  # the innermost frame: the line that allocated it
            sites[f"{where.filename.rsplit('/site-packages/', 1)[-1]}:{where.lineno}"] += diff.size_diff
        sessions = max(1, done - since)
        traced, _ = tracemalloc.get_traced_memory()
        print(f"  memory by holder (tracemalloc, over {sessions} sessions after the first {since}; live Python "
              f"memory now {traced / 2**20:.1f} MiB), KiB per session:")
        for area, size in grown.most_common():
            print(f"    {area:42s} {size / 1024 / sessions:+8.1f}  ({size / 2**20:+.1f} MiB)")
        print("  the lines whose allocations grew most, KiB per session:")
        for site, size in sites.most_common(self.SITES):
            print(f"    {size / 1024 / sessions:+8.2f}  {site}")


MEMORY = MemoryTrace()


class Sampler:
    """RSS and open descriptors of each process (the stack: every handler, the front end, the
    pollers and the worker; the driver; the moto server), against the sessions finished so far,
    every `every` seconds."""

    def __init__(self, pids: dict[str, int], finished: Callable[[], int], every: float = 2.0) -> None:
        self.pids, self.finished, self.every = pids, finished, every
        self.samples: dict[str, list[tuple[int, float, int]]] = defaultdict(list)
        self.cpu_start = {name: cpu_secs(pid) for name, pid in pids.items()}
        self.machine_start = machine_busy_secs()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            done = self.finished()
            MEMORY.sample(done)
            for name, pid in self.pids.items():
                try:
                    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                               if line.startswith("VmRSS:"))
                    fds = len(os.listdir(f"/proc/{pid}/fd"))
                except (OSError, StopIteration):
                    continue
                self.samples[name].append((done, rss / 1024, fds))

    def cores(self, seconds: float) -> dict[str, float]:
        """Each process's CPU over the run, in cores (1.0: one core busy throughout; a Python
        process's threads share one interpreter lock, so about 1.0 is its ceiling)."""
        out = {name: (cpu_secs(pid) - self.cpu_start[name]) / seconds for name, pid in self.pids.items()}
        out[MACHINE] = (machine_busy_secs() - self.machine_start) / seconds
        return out

    @staticmethod
    def slope(points: list[tuple[float, float]]) -> float:
        """Least squares, per thousand sessions."""
        if len(points) < 3 or len({x for x, _ in points}) < 2:
            return 0.0
        mx, my = statistics.fmean(x for x, _ in points), statistics.fmean(y for _, y in points)
        sxx = sum((x - mx) ** 2 for x, _ in points)
        return 1000 * sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def cpu_secs(pid: int) -> float:
    """User + system CPU seconds of a process (and its finished threads) from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


MACHINE = "whole machine"
"""The `cores` entry of every process together (the stack with its worker, the driver, moto), out of
`os.cpu_count()`: the parts share the machine's cores, so they saturate together before any one
process reaches its own one-core ceiling."""


def machine_busy_secs() -> float:
    """CPU seconds the machine spent not idle (every core, /proc/stat's first line)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- faults


def inject(stack: Any, rate: float, kills: float, seed: int) -> Any:
    """The chaos suite's injector at `rate` on every AWS call a handler makes (throttles and 5xx,
    which botocore retries first), and `kills`: a share of the engine's and notifier's AWS calls
    that abort their invocation instead (the record comes back, as after a crash)."""
    import boto3

    from holdpoint_local.faults import COMMON, Faults

    faults = Faults(seed=seed).install(boto3.DEFAULT_SESSION or boto3._get_default_session())
    for service in ("dynamodb", "sqs", "stepfunctions", "scheduler", "events", "s3", "secretsmanager"):
        for code in COMMON:
            if rate:
                faults.inject(service, None, code, probability=rate / len(COMMON))
    if kills:
        rng = random.Random(seed + 1)
        hooked = boto3.DEFAULT_SESSION or boto3._get_default_session()

        def kill(event_name: str = "", **_: Any) -> None:
            from holdpoint_local.faults import calling_function

            if calling_function() in ("EngineFunction", "NotifierFunction") and rng.random() < kills:
                KILLED[event_name.split(".")[-1]] += 1
                raise Killed(event_name)

        hooked.events.register_first("before-send", kill, unique_id="soak-kills")
    return faults


KILLED: Counter[str] = Counter()
"""The invocations the soak aborted, by the AWS operation they were about to call."""


class Killed(RuntimeError):
    """An invocation aborted mid-way, as if its execution environment died there."""


CONTAINER_PATIENCE = 600.0
"""How long a session may take with its functions in containers: a killed invocation's messages
come back after the work queue's visibility timeout (120 s), and a new container starts."""


class ContainerKiller:
    """`--container-kills S` with `--invoke sam`: about every S s (exponential), `docker kill` the
    container of the engine or the notifier while it runs an invocation, as an execution
    environment dies on AWS; SAM CLI starts a new one for the next invoke."""

    FUNCTIONS = ("EngineFunction", "NotifierFunction")

    def __init__(self, stack: Any, mean_secs: float, seed: int) -> None:
        self.stack, self.mean, self.rng = stack, mean_secs, random.Random(seed + 3)
        self.killed: Counter[str] = Counter()
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ContainerKiller:
        self.thread.start()
        return self

    def stop(self) -> str:
        self.stop_event.set()
        self.thread.join(timeout=30)
        return f"containers killed mid-invocation: {sum(self.killed.values())} ({dict(self.killed)})"

    def _run(self) -> None:
        while not self.stop_event.wait(self.rng.expovariate(1 / self.mean)):
            busy = [f for f in self.FUNCTIONS if self.stack.functions[f].in_flight > 0]
            while not busy and not self.stop_event.wait(0.05):  # the next invocation that runs
                busy = [f for f in self.FUNCTIONS if self.stack.functions[f].in_flight > 0]
            if busy:
                self._kill(self.rng.choice(busy))

    def _kill(self, function: str) -> None:
        import subprocess

        ids = subprocess.run(["docker", "ps", "-q"], capture_output=True, text=True, check=False).stdout.split()
        for cid in ids:
            env = subprocess.run(["docker", "inspect", "--format", "{{json .Config.Env}}", cid],
                                 capture_output=True, text=True, check=False).stdout
            if f"AWS_LAMBDA_FUNCTION_NAME={function}" in (json.loads(env) if env.strip() else []):
                if subprocess.run(["docker", "kill", cid], capture_output=True, check=False).returncode == 0:
                    self.killed[function] += 1
                return


def cut_calls(stack: Any, rate: float, seed: int) -> Any:
    """`--cut-calls P`: the containers' relay to AWS loses that share of what it carries (None at 0)."""
    relay = stack.containers.relay if rate and stack.containers else None
    if relay is not None:
        relay.cut(rate, seed)
    return relay


def uncut(relay: Any) -> None:
    """Stop losing calls, and say how many were lost each way."""
    if relay is not None:
        relay.cut(0.0)
        print(f"  AWS calls lost on the way: {relay.cuts['request']} requests, {relay.cuts['answer']} answers "
              "(of calls AWS did)", flush=True)


# --------------------------------------------------------------------------- the run


def http_worker(stack: Any, worker: Worker) -> dict[str, str]:
    """The soak's worker over signed HTTP on the address the containers reach this machine at (the
    functions in containers cannot call into this process); its agents' `worker` declaration."""
    import seed_worker
    from holdpoint_local import demo

    server, _ = seed_worker.serve(0, os.environ[demo.SECRET_ENV], host=stack.host, answer=worker, remember=0)
    return {"url": f"http://{stack.host}:{server.server_address[1]}/", "secret": f"env:{demo.SECRET_ENV}"}


def setup(stack: Any, worker: Worker) -> dict[str, str]:
    """The agents (plain, expiring, a quorum of two) with the in-process worker (over HTTP when the
    functions run in containers), and two approvers."""
    from holdpoint.aws.keys import put_api_key
    from holdpoint.aws.store import Store
    from holdpoint.outbound import workers

    workers.register(WORKER, worker)
    http = Http(stack.base_url, stack.api_key)
    over_http = http_worker(stack, worker) if stack.invoke == "sam" else None
    base = {"llm": {"provider": "scripted", "script": SCRIPT},
            "tools": [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}],
            **({"worker": over_http} if over_http else {})}
    agents = {"assistant": base, "assistant-expiring": {**base, "interrupt_expires_in": EXPIRES_SECS},
              "assistant-quorum": {**base, "approval": {"subjects": ["ann", "bob"], "quorum": 2}}}
    store = Store(stack.env["TABLE_NAME"])
    for name, agent in agents.items():
        stored = http.call("PUT", f"/v1/agents/{name}", agent)["agent"]
        if over_http is None:
            store.put_agent(stack.tenant, name, {**stored, "worker": {"python": WORKER}})
    keys = {}
    for who in ("ann", "bob"):
        keys[who] = f"hp_soak_{who}_{uuid.uuid4().hex[:8]}"
        put_api_key(stack.env["TABLE_NAME"], keys[who], stack.tenant, who, "operator")
    return keys


class Spend:
    """What the stack's functions spend while the soak runs, counted on the clients they call AWS
    with: DynamoDB write units (bench/_common.Meter's on-demand rules, on every client of the
    default session, calls a function makes only), AWS calls per operation
    (holdpoint_local.emulators.credentials.CALLS) and invocations per function. Installed before the stack
    starts, since a botocore client copies its session's hooks when it is built."""

    def __init__(self) -> None:
        import boto3
        from _common import Meter

        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        self.meter, self.on = Meter(), False
        core = boto3.DEFAULT_SESSION._session  # noqa: SLF001 (the session every client is built from)
        core.register("before-call", self._before)
        core.register("after-call", self._after)
        core.register("before-parameter-build.sqs.SendMessage", self._sent)
        self.calls: Counter[tuple[str, str, str, str]] = Counter()
        self.sent: Counter[str] = Counter()  # work messages a function sent, by function and kind
        self.invocations: Counter[str] = Counter()
        self.records: Counter[str] = Counter()  # the SQS messages and stream records the invocations carried
        self.wru = 0
        self.lock = threading.Lock()

    def _before(self, **kwargs: Any) -> None:
        from holdpoint_local.emulators.credentials import current

        if self.on and current() is not None:
            self.meter._before(**kwargs)  # noqa: SLF001

    def _sent(self, params: dict[str, Any], **_: Any) -> None:
        from holdpoint_local.emulators.credentials import current

        acting = current()
        if self.on and acting is not None:
            try:
                kind = json.loads(params.get("MessageBody") or "{}").get("kind", "?")
            except (ValueError, AttributeError):
                kind = "?"
            self.sent[f"{acting.function} {kind}"] += 1

    def _after(self, **kwargs: Any) -> None:
        """Each call's write units are summed and its record dropped, so the meter's memory does not
        grow with the calls it has counted (it keeps each item's size, which the units need)."""
        if self.on and "bench_req" in (kwargs.get("context") or {}):
            with self.lock:  # the functions' threads call at once: one record in, summed, out
                self.meter._after(**kwargs)  # noqa: SLF001
                self.wru += sum(rec.wru for rec in self.meter.take())

    def start(self, stack: Any) -> None:
        from holdpoint_local.emulators.credentials import CALLS

        self.calls = Counter(CALLS.calls)
        self.invocations = Counter({name: fn.invocations for name, fn in stack.functions.items()})
        self.records = Counter({name: fn.records for name, fn in stack.functions.items()})
        self.on = True

    def stop(self, stack: Any) -> None:
        from holdpoint_local.emulators.credentials import CALLS

        self.on = False
        self.calls = Counter(CALLS.calls) - self.calls
        self.invocations = Counter({name: fn.invocations for name, fn in stack.functions.items()}) - self.invocations
        self.records = Counter({name: fn.records for name, fn in stack.functions.items()}) - self.records

    def count(self, operation: str, error: str = "") -> int:
        return sum(n for (_, _, op, err), n in self.calls.items() if op == operation and err == error)

    def per_session(self, sessions: int) -> dict[str, float]:
        """Each quantity the capacity model predicts, per session."""
        starts = self.count("StartExecution")
        return {name: value / max(1, sessions) for name, value in {
            "ddb_table_wru": self.wru,
            "sfn_start_execution": starts,
            "sfn_send_task_success": self.count("SendTaskSuccess"),
            # the functions' sends, and each park's, which Step Functions sends (ParkBranch's sqs:sendMessage)
            "sqs_send": self.count("SendMessage") + starts,
            "engine_messages": self.records["EngineFunction"],
            "notifier_records": self.records["NotifierFunction"],
        }.items()}

    def batching(self) -> str:
        """Records per invocation of the batched functions: the model prices one invocation per
        record, so invocations come out at or under it by this factor."""
        return ", ".join(f"{fn} {self.invocations[fn]} invocations for {self.records[fn]} records"
                         for fn in ("EngineFunction", "NotifierFunction"))


MODEL_FLAGS = ("--sessions-per-sec", "1", "--tenants", "1", "--top-tenant-share", "1", "--watchers", "0",
               "--reminders-per-interrupt", "0", "--retry-timers-per-session", "0")
"""bench/capacity.py's baseline reduced to one plain approval session a second: one interrupt,
resumed, no reminder (the soak's agents declare none), no stream watcher."""


def modelled() -> dict[str, float]:
    """The capacity model's spend of one plain approval session (bench/capacity.py)."""
    import capacity

    a = capacity.parser().parse_args(list(MODEL_FLAGS))
    loads = capacity.loads(a, 1)
    out = {k: loads[k] for k in ("ddb_table_wru", "sfn_start_execution", "sfn_send_task_success", "sqs_send")}
    out["engine_messages"] = loads["sqs_receive"] * a.messages_per_receive  # priced one invocation a message
    out["notifier_records"] = a.interrupts_per_session * a.notifier_invocations  # priced one invocation a record
    return out


def spend_ratios(got: dict[str, float], want: dict[str, float]) -> dict[str, int]:
    """Each measured quantity over the model's, in hundredths: the ratio as printed (two decimals)
    is the ratio judged, so a ratio shown as 1.10x is within 10 %."""
    return {k: round(got[k] / want[k] * 100) for k in got}


def spend_verdict(ratios: dict[str, int], plain: bool) -> bool | None:
    """Within 10 % each (as printed) is met whatever the mix; outside it, a mix with harder paths
    than the model's plain session is not judged."""
    if all(abs(r - 100) <= 10 for r in ratios.values()):
        return True
    return False if plain else None


def report_spend(spend: Spend, run: Run) -> bool:
    """The measured spend per session beside the model's, one line each, and a FIGURE."""
    sessions = len([o for o in run.outcomes if not o.error])
    got, want = spend.per_session(sessions), modelled()
    plain = all(o.kind == "plain" for o in run.outcomes)
    print(f"  spend per session over {sessions} sessions, beside bench/capacity.py's model of a plain approval "
          f"session{'' if plain else ' (this mix has harder paths too: run --mix plain=1 to compare)'}:")
    ratios = spend_ratios(got, want)
    for name, value in got.items():
        print(f"    {name:<24} measured {value:8.2f}   model {want[name]:8.2f}   ratio {ratios[name] / 100:.2f}")
    refused = Counter({f"{fn} {op} {err}": n for (fn, _, op, err), n in spend.calls.items() if err})
    print(f"    work messages sent, by function and kind: {dict(spend.sent)}; refused calls: {dict(refused) or 'none'}")
    print(f"    invocations by function: {dict(spend.invocations)}; batched: {spend.batching()}")
    verdict = spend_verdict(ratios, plain)  # judged on the ratios printed, so it agrees with them
    figure("soak spend per session over the capacity model's",
           ", ".join(f"{k} {r / 100:.2f}x" for k, r in ratios.items()), "within 10 % each (plain sessions)", verdict)
    return verdict is True


class Hog:
    """Another caller (an API key of its own) holding `count` waits at all times: each wait is opened
    again as soon as it ends, and after `Retry-After` when refused, so it stays at its quota."""

    def __init__(self, stack: Any, count: int) -> None:
        from holdpoint.aws.keys import put_api_key

        self.key = f"hp_soak_hog_{uuid.uuid4().hex[:8]}"
        put_api_key(stack.env["TABLE_NAME"], self.key, stack.tenant, "hog", "operator")
        self.base, self.count = stack.base_url, count
        http = Http(stack.base_url, self.key)
        self.sid = http.call("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                       "message": {"role": "user", "content": "hello"}})["session_id"]
        http.until(self.sid, "idle,done,interrupted")
        self.after = max(e["seq"] for e in http.call("GET", f"/v1/sessions/{self.sid}/events?limit=100")["events"])
        self.held, self.refused = Counter[int](), Counter[int]()
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._hold, args=(i,), daemon=True) for i in range(count)]

    def _hold(self, slot: int) -> None:
        url = f"{self.base}/v1/sessions/{self.sid}/events?after_seq={self.after}&wait=20"
        headers = {"Authorization": f"Bearer {self.key}"}
        while not self.done.is_set():
            resp = requests.get(url, headers=headers, timeout=60)
            if resp.status_code == 429:
                self.refused[slot] += 1
                self.done.wait(float(resp.headers.get("Retry-After", "1")))
            else:
                self.held[slot] += 1

    def start(self) -> Hog:
        for t in self.threads:
            t.start()
        return self

    def stop(self) -> str:
        self.done.set()
        for t in self.threads:
            t.join(timeout=30)
        return (f"{self.count} waits held at all times by another caller: {sum(self.held.values())} waits "
                f"answered, {sum(self.refused.values())} refused at once (429)")


def mix_of(text: str) -> list[tuple[str, float]]:
    shares = [(k, float(v)) for k, v in (part.split("=") for part in text.split(",") if part)]
    bad = [k for k, _ in shares if k not in KINDS]
    if bad or not shares:
        raise SystemExit(f"--mix names {bad or 'nothing'}; kinds: {', '.join(KINDS)}")
    return shares


@dataclass
class Run:
    outcomes: list[Outcome]
    offered: float
    seconds: float
    duration: float
    samples: dict[str, list[tuple[int, float, int]]]
    errors: Counter[str]
    cores: dict[str, float]
    backlog: int

    @property
    def achieved(self) -> float:
        """Sessions finished per second, over the arrivals' window plus one median session: an
        open-loop stack that keeps up drains within about one session's length."""
        spans = [o.finished - o.submitted for o in self.outcomes if o.finished and o.submitted and not o.error]
        done = len(spans)
        return done / (self.duration + statistics.median(spans)) if spans else 0.0


DRIVER = "driver (sessions over HTTP)"


@dataclass(frozen=True)
class Arrivals:
    """What the driver process needs to run the sessions: where the stack answers, the keys, and
    the run's shape."""

    base: str
    key: str
    keys: dict[str, str]
    live_url: str | None
    rate: float
    duration: float
    mix: list[tuple[str, float]]
    seed: int
    delay: tuple[float, float]
    long_poll: bool
    patience: float


def drive(plan: Arrivals, done: Any, answers: Any) -> None:
    """The driver process: open-loop arrivals for `plan.duration` s, then every session let finish;
    sends back (outcomes, 5xx counts, arrivals, seconds, its own CPU seconds). It runs apart from the stack so that the
    stack's memory and CPU are its own; its clock (`perf_counter`, CLOCK_MONOTONIC on Linux) is the
    stack's, so its times and the worker's compare."""
    rng = random.Random(plan.seed)
    http = Http(plan.base, plan.key, plan.long_poll, plan.patience)
    flows = Sessions(http, plan.keys, plan.live_url, random.Random(plan.seed + 7), plan.delay)
    kinds, weights = zip(*plan.mix, strict=True)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def one(kind: str) -> None:
        out = flows.run(kind)
        with lock:
            outcomes.append(out)
            done.value += 1

    start = time.monotonic()
    arrivals = 0
    with ThreadPoolExecutor(max_workers=256) as pool:
        at = start
        while True:
            at += rng.expovariate(plan.rate)
            if at - start > plan.duration:
                break
            time.sleep(max(0.0, at - time.monotonic()))
            pool.submit(one, rng.choices(kinds, weights)[0])
            arrivals += 1
    answers.send((outcomes, http.errors, arrivals, time.monotonic() - start, time.process_time()))


def soak(stack: Any, worker: Worker, keys: dict[str, str], rate: float, duration: float, mix: list[tuple[str, float]],
         seed: int, delay: tuple[float, float], long_poll: bool = False) -> Run:
    """Open-loop arrivals for `duration` s from a driver process of its own (`drive`), then every
    session is let finish; the stack's, moto's and the driver's RSS, descriptors and CPU sampled apart."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # the stack's threads are not forked
    done = ctx.Value("i", 0)
    ours, theirs = ctx.Pipe(duplex=False)
    plan = Arrivals(stack.base_url, stack.api_key, keys, stack.live.url if stack.live else None, rate, duration,
                    mix, seed, delay, long_poll, CONTAINER_PATIENCE if stack.invoke == "sam" else 120.0)
    driver = ctx.Process(target=drive, args=(plan, done, theirs), daemon=True)
    driver.start()
    pids = {"stack (handlers, front end, pollers, worker)": os.getpid(), DRIVER: driver.pid}
    moto = getattr(stack.moto, "_proc", None)
    if moto is not None:
        pids["moto server"] = moto.pid
    sampler = Sampler({k: v for k, v in pids.items() if v}, lambda: done.value)
    sampler.thread.start()
    outcomes, errors, arrivals, seconds, driver_cpu = ours.recv()
    driver.join(timeout=30)
    sampler.stop.set()
    cores = {**sampler.cores(seconds), DRIVER: driver_cpu / seconds}  # its /proc entry is gone once it ends
    sqs = stack.client("sqs")
    depth = sqs.get_queue_attributes(QueueUrl=stack.env["WORK_QUEUE_URL"], AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return Run(outcomes, arrivals / duration, seconds, duration, dict(sampler.samples), errors, cores,
               sum(int(v) for v in depth.values()))


def invariants(stack: Any, worker: Worker, run: Run) -> dict[str, str | None]:
    """Each invariant: None when it held, else what broke (read from the table and the worker's log)."""
    from holdpoint.aws.store import Store, session_pk

    store = Store(stack.env["TABLE_NAME"])
    ddb = stack.client("dynamodb")
    broken: dict[str, list[str]] = defaultdict(list)
    items_by_kind: dict[str, Counter[int]] = defaultdict(Counter)
    per_decision = Counter((s, d) for s, d, t in worker.log if t == "interrupt.resumed")
    for out in run.outcomes:
        if out.error or not out.session_id:
            broken["final state"].append(f"{out.kind} {out.session_id or '-'}: {out.error}")
            continue
        state = store.load(stack.tenant, out.session_id)
        assert state is not None
        messages = [n.message for n in state.tree.active_path()]
        want = "I did not send it." if out.kind == "expire" else "Email sent."
        if not messages or messages[-1].get("content") != want:
            broken["final state"].append(f"{out.kind} {out.session_id}: ends {messages[-1:]}")
        tools = [m for m in messages if m.get("role") == "tool"]
        if len(tools) != 1:
            broken["each tool once"].append(f"{out.session_id}: {len(tools)} tool messages")
        resumed = {d for (s, d) in per_decision if s == out.session_id}
        if len(resumed) != 1:
            broken["each decision once"].append(f"{out.session_id}: {len(resumed)} interrupt.resumed decisions")
        if any(i.status == "open" for i in state.interrupts.values()):
            broken["no open interrupt"].append(out.session_id)
        if out.followed is not None:
            logged = [e.seq for e in store.events(stack.tenant, out.session_id, 0, 1000)]
            if out.followed != logged[:len(out.followed)] or len(out.followed) != len(set(out.followed)):
                broken["followers in order"].append(f"{out.session_id}: got {out.followed[:8]}..., log {logged[:8]}...")
        pk = session_pk(stack.tenant, out.session_id)
        count = ddb.query(TableName=stack.env["TABLE_NAME"], KeyConditionExpression="PK = :pk",
                          ExpressionAttributeValues={":pk": {"S": pk}}, Select="COUNT")["Count"]
        items_by_kind[out.kind][count] += 1
    if run.errors:
        broken["zero 5xx"] = [f"{k} x{v}" for k, v in run.errors.items()]
    for kind, counts in items_by_kind.items():
        if len(counts) > 1:
            broken["items per session"].append(f"{kind}: {dict(counts)}")
    names = ("final state", "each tool once", "each decision once", "no open interrupt", "followers in order",
             "zero 5xx", "items per session")
    return {name: "; ".join(broken[name][:5]) + (f" (+{len(broken[name]) - 5})" if len(broken[name]) > 5 else "")
            if broken.get(name) else None for name in names}


HOP_SAMPLE = 40
"""Plain sessions whose traces are read back for the per-hop latencies (the first to finish)."""


def hop_latencies(http: Http, run: Run, sample: int = HOP_SAMPLE) -> dict[str, list[float]]:
    """Per-hop latencies from the spans (`GET /v1/sessions/{id}/trace`, X-Ray on the local stack):
    each hop's own duration, and the gaps a turn waits between hops (the queue, Step Functions, the
    resume's wake), in ms, from the plain sessions' one trace each."""
    done = sorted((o for o in run.outcomes if o.kind == "plain" and o.finished and not o.error),
                  key=lambda o: o.finished or 0)[:sample]
    out: dict[str, list[float]] = defaultdict(list)
    for o in done:
        for trace in http.call("GET", f"/v1/sessions/{o.session_id}/trace")["traces"]:
            hops = {h["name"]: h for h in trace["hops"]}
            for name, hop in hops.items():
                out[name].append(hop["duration_ms"])
            for a, b in (("api", "engine kick"), ("engine kick", "engine park"), ("resume", "engine wake")):
                if a in hops and b in hops:
                    out[f"{a} -> {b} start"].append(hops[b]["start_ms"] - hops[a]["start_ms"])
    return out


def report_hops(latencies: dict[str, list[float]]) -> None:
    print("  per hop, from the traces' spans (hop: its duration; a -> b start: the wait between):")
    for name in sorted(latencies, key=lambda n: ("->" in n, n)):
        ms = latencies[name]
        print(f"    {name}: n={len(ms)} p50 {pct(ms, .5):.0f} ms, p95 {pct(ms, .95):.0f} ms, "
              f"p99 {pct(ms, .99):.0f} ms")


def report(run: Run, worker: Worker, held: dict[str, str | None], redelivered: int) -> bool:
    done = [o for o in run.outcomes if not o.error]
    visible = [o.visible - o.submitted for o in done if o.visible]
    to_worker = [worker.resumed_at[o.session_id] - o.resumed for o in done
                 if o.resumed and o.session_id in worker.resumed_at]
    lags = [lag for o in done for lag in o.lags]
    achieved = run.achieved
    print(f"\n{len(run.outcomes)} sessions ({dict(Counter(o.kind for o in run.outcomes))}) in {run.seconds:.0f} s "
          f"({run.duration:.0f} s of arrivals); work queue left: {run.backlog}")
    print("  CPU over the run, in cores: " + ", ".join(f"{k} {v:.2f}" for k, v in run.cores.items()))
    figure("soak achieved / offered rate", f"{achieved:.2f} / {run.offered:.2f} sessions/s",
           "achieved within 10% of offered", achieved >= 0.9 * run.offered)
    for name, values in (("submit -> interrupt visible", visible), ("resume -> worker", to_worker),
                         ("commit -> WebSocket", lags)):
        ms = [v * 1000 for v in values]
        print(f"  {name}: n={len(ms)} p50 {pct(ms, .5):.0f} ms, p95 {pct(ms, .95):.0f} ms, p99 {pct(ms, .99):.0f} ms")
    for proc, samples in run.samples.items():
        rss = Sampler.slope([(d, r) for d, r, _ in samples])
        fds = Sampler.slope([(d, f) for d, _, f in samples])
        first, last = samples[0] if samples else (0, 0, 0), samples[-1] if samples else (0, 0, 0)
        judged = len(run.outcomes) >= JUDGED
        figure(f"soak {proc} RSS / fds", f"{first[1]:.0f} -> {last[1]:.0f} MiB ({rss:+.1f} MiB per 1,000 sessions), "
               f"{first[2]} -> {last[2]} fds ({fds:+.1f} per 1,000)"
               + ("" if judged else f" (fewer than {JUDGED} sessions)"),
               "flat within noise (|slope| < 20 MiB, < 20 fds per 1,000 sessions)",
               (abs(rss) < 20 and abs(fds) < 20) if judged else None)
    print(f"  redelivered decisions (same id to the worker again): {redelivered}")
    for name, why in held.items():
        print(f"INVARIANT {name}: {'held' if why is None else 'BROKEN (' + why + ')'}")
    return all(why is None for why in held.values())


def saturated(run: Run, rate: float) -> str:
    """Which part gave way: the busiest process if it is near its one-core ceiling, the machine if
    its cores together are, else the engine if the work queue was left behind, else none (the
    latency bound came first, and the busiest process is named)."""
    machine = run.cores.get(MACHINE, 0.0)
    name, busiest = max(((k, v) for k, v in run.cores.items() if k != MACHINE), key=lambda kv: kv[1])
    if busiest >= 0.85:
        return f"{name} ({busiest:.2f} cores: CPU-bound under one interpreter lock)"
    ncpu = os.cpu_count() or 1
    if machine >= 0.85 * ncpu:
        return f"the machine ({machine:.2f} of {ncpu} cores busy; the busiest process, {name}, at {busiest:.2f})"
    if run.backlog > 5 * rate:
        return f"the engine (work queue left {run.backlog} messages)"
    return (f"none near its ceiling (the latency bound came first; the busiest process, {name}, at "
            f"{busiest:.2f} cores, the machine at {machine:.2f} of {ncpu})")


def knee(stack: Any, worker: Worker, keys: dict[str, str], rates: list[float], args: argparse.Namespace,
         delay: tuple[float, float]) -> int:
    """Step the offered rate up until p99 of submit -> interrupt visible passes `--bound` or an
    invariant breaks; the highest rate held, and what saturated at the first that was not."""
    held_rate, why = 0.0, "every rate held"
    for rate in rates:
        print(f"\n== knee step: {rate}/s for {args.duration:.0f} s", flush=True)
        run = soak(stack, worker, keys, rate, args.duration, mix_of(args.mix), args.seed, delay, args.long_poll)
        held = invariants(stack, worker, run)
        report(run, worker, held, 0)
        visible = [1000 * (o.visible - o.submitted) for o in run.outcomes if o.visible and not o.error]
        p99 = pct(visible, 0.99)
        kept_up = run.achieved >= 0.9 * run.offered
        if p99 > args.bound or not kept_up or any(held.values()):
            why = (f"at {rate}/s: p99 {p99:.0f} ms (bound {args.bound:.0f}), achieved {run.achieved:.2f}/s, "
                   f"invariants {'held' if not any(held.values()) else 'BROKEN'}; first to saturate: "
                   f"{saturated(run, rate)}")
            break
        held_rate = rate
    figure("soak knee: the highest rate the local stack holds", f"{held_rate}/s ({why})",
           "printed with the part that saturated first", True)
    return 0


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=2.0, help="sessions started per second (default 2)")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of arrivals (default 600)")
    parser.add_argument("--mix", default=DEFAULT_MIX, help=f"kind=share,... (default {DEFAULT_MIX})")
    parser.add_argument("--faults", type=float, default=0.0, help="share of AWS calls refused (e.g. 0.01)")
    parser.add_argument("--kills", type=float, default=0.0, help="share of engine/notifier AWS calls that abort "
                        "their invocation (e.g. 0.002)")
    parser.add_argument("--delay", default="0.2,2.0", help="a person's answer comes after uniform(a, b) s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--long-poll", action="store_true", help="wait with GET ...?until= long-polls (each holds an "
                        "API function instance while it waits) instead of plain reads every 250 ms")
    parser.add_argument("--knee", help="rates to step through (e.g. 1,2,4,8), each for --duration s, until p99 "
                        "passes --bound or an invariant breaks")
    parser.add_argument("--bound", type=float, default=5000.0, help="the p99 bound of submit -> interrupt "
                        "visible, in ms (default 5000)")
    parser.add_argument("--hog", type=int, default=0, help="another caller holds this many waits at all times "
                        "(its QuotaStreamWaitsPerCaller is 4), each opened again as it ends")
    parser.add_argument("--waits-total", type=int, help="the stack's QuotaStreamWaitsTotal (the template's 750 "
                        "otherwise; the local API function has 4 instances)")
    parser.add_argument("--trace-memory", type=int, metavar="N", help="trace the stack process's allocations "
                        "(tracemalloc) and print their growth by holder between N sessions finished and the end")
    parser.add_argument("--trace-frames", type=int, default=1, metavar="K", help="frames tracemalloc keeps per "
                        "allocation (default 1: the allocating line)")
    parser.add_argument("--no-spend", dest="spend", action="store_false", help="leave the spend meter out of the "
                        "stack's process (it keeps each item's size), so its memory is the stack's alone")
    parser.add_argument("--invoke", choices=("process", "sam"), default="process", help="run the handlers in this "
                        "process (default) or as sam build built them, each in its container (the local stack's "
                        "INVOKE=sam; needs Docker and .venv-sam)")
    parser.add_argument("--container-kills", type=float, default=0.0, metavar="S", help="with --invoke sam: about "
                        "every S s, kill the engine's or the notifier's container while it runs an invocation")
    parser.add_argument("--cut-calls", type=float, default=0.0, metavar="P", help="with --invoke sam: lose this "
                        "share of the functions' AWS calls on the way (the request, or AWS's answer to a call it "
                        "did), as a network does; the SDK in the container retries")
    parser.add_argument("--json", help="write the outcomes here")
    args = parser.parse_args(argv)
    if not 0 < args.rate <= 50 or not 0 < args.duration <= 7200:
        parser.error("--rate must be in (0, 50] and --duration in (0, 7200]")
    if args.invoke == "sam" and (args.faults or args.kills or args.knee):
        parser.error("--faults, --kills and --knee act on handlers in this process; with --invoke sam, "
                     "--container-kills kills their containers")
    if (args.container_kills or args.cut_calls) and args.invoke != "sam":
        parser.error("--container-kills and --cut-calls need --invoke sam")
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    in_containers = args.invoke == "sam"
    delay = tuple(float(x) for x in args.delay.split(","))
    spend = Spend() if args.spend and not in_containers else None  # it counts this process's AWS calls
    if args.trace_memory:
        MEMORY.start(args.trace_memory, args.trace_frames)
    if in_containers:
        from holdpoint_local import demo

        os.environ.setdefault(demo.SECRET_ENV, uuid.uuid4().hex)  # the containers are told it at start
    stack = start_stack(parameters={"QuotaStreamWaitsTotal": str(args.waits_total)} if args.waits_total else None,
                        tracing=True, invoke=args.invoke)
    hog = killer = None
    try:
        worker = Worker()
        keys = setup(stack, worker)
        hog = Hog(stack, args.hog).start() if args.hog else None
        faults = inject(stack, args.faults, args.kills, args.seed) if args.faults or args.kills else None
        if args.knee:
            return knee(stack, worker, keys, [float(r) for r in args.knee.split(",")], args, (delay[0], delay[1]))
        print(f"soak: {args.rate}/s for {args.duration:.0f} s, faults {args.faults}, kills {args.kills}, "
              f"seed {args.seed}", flush=True)
        if spend is not None:
            spend.start(stack)
        killer = ContainerKiller(stack, args.container_kills, args.seed).start() if args.container_kills else None
        relay = cut_calls(stack, args.cut_calls, args.seed)
        run = soak(stack, worker, keys, args.rate, args.duration, mix_of(args.mix), args.seed,
                   (delay[0], delay[1]), args.long_poll)
        if spend is not None:
            spend.stop(stack)
        MEMORY.report(len(run.outcomes))
        if faults is not None:
            faults.stop()
            print(f"  injected: {sum(faults.injected.values())} refusals at "
                  f"{len({k[:3] for k in faults.injected})} sites; {sum(KILLED.values())} invocations killed "
                  f"({dict(KILLED)})", flush=True)
        if hog is not None:
            print(f"  {hog.stop()}", flush=True)
            hog = None
        if killer is not None:
            print(f"  {killer.stop()}", flush=True)
            killer = None
        uncut(relay)
        held = invariants(stack, worker, run)
        redelivered = sum(c - 1 for c in Counter((s, d) for s, d, _ in worker.log).values() if c > 1)
        ok = report(run, worker, held, redelivered)
        if not in_containers:  # the containers' hops are not sent to the local X-Ray (local/README.md)
            report_hops(hop_latencies(Http(stack.base_url, stack.api_key), run))
        if spend is not None:
            report_spend(spend, run)
        if args.json:
            Path(args.json).write_text(json.dumps([o.__dict__ for o in run.outcomes]), encoding="utf-8")
    finally:
        if hog is not None:
            hog.stop()
        if killer is not None:
            killer.stop()
        stack.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
