"""DynamoDB (and SQS / Step Functions) requests and bytes per engine step and per resume,
at conversation trees of 10, 100 and 1,000 messages (bench/README.md, (a)).

    python bench/ddb_per_step.py [--sizes 10,100,1000] [--history-sizes 10,100] [--json FILE]

How the trees are built ("seeded"): the session is created through the real API path
(`sessions.submit` + the engine running its first turn: 2 nodes), then the remaining N-2
nodes are appended as a linear user/assistant chain with `SessionState.add_node` +
`Store.commit`, 20 nodes per transaction (well under the 100-item TransactWriteItems
limit). User messages are ~100 bytes of text, assistant ones ~300. That gives a tree of
exactly N nodes whose active path is all N, and no other history. A second, "history" table builds the
tree by driving N/2 real turns instead (every turn also leaves its decisions, calls, turn and
events in the partition), at smaller N because its cost grows quadratically (see the report).

What is measured, on a session at N nodes, with the real Runner/Store/WorkQueue/Parking against
moto's in-process AWS, counting every request on their boto3 clients with botocore event hooks:

1. a plain turn: `client.message` "say hi" (API side) and every engine step it causes;
2. an interrupt turn: `client.message` "email bob" -> model asks for send_email -> the worker
   interrupts on `tool.execute` -> StartExecution (park) -> the `park` queue message (task token);
3. the resume, API side alone (`holdpoint.resume.resume`);
4. the `wake` queue message and every engine step until the turn ends.

An "engine step" is one iteration of `Runner.run`: the load that starts it, the one external
call, and the commit(s) of its outcome (`Runner.transact`, which reloads before committing).

Everything runs three times (READS): *cold*, with the store's cache off (every load reads the
whole session, even right after the same invocation's own commit: a bound the engine cannot
reach); *cold-container*, with caches on but emptied at the start of every Lambda invocation the
scenario makes (each API request, each queue message), as if no container were ever reused: the
first load of an invocation reads the whole session, later ones what that invocation loaded and
committed; and *warm*, with the engine's and the API's stores each keeping their own cache, as two
warm containers would (the engine's has served the session before the measured turns). The last
table puts the read bytes and RRU of a delivering step side by side, with the 1000/10 ratio of each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Meter, Totals, mocked_aws, ratio, table  # noqa: E402
from figures import figure  # noqa: E402

if TYPE_CHECKING:
    from holdpoint.services.resume import Resumed

TOOLS = [
    {"name": "send_email", "input": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}},
]
SCRIPT = [
    {"when": {"role": "user", "contains": "email"},
     "reply": {"tool_calls": [{"name": "send_email", "arguments": {"to": "bob"}}]}},
    {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Email sent."}},
    {"when": {"role": "tool"}, "reply": {"content": "I did not send it."}},
    {"reply": {"content": "Hi! " + "How can I help you today? " * 3}},
]
USER_TEXT = "Please look at the quarterly figures again and tell me what changed since last week, briefly. "
ASSISTANT_TEXT = ("Revenue is up four percent on the prior week, driven by renewals in the enterprise tier; "
                  "churn is flat; support backlog fell by a third after the new triage rules. Two open risks: "
                  "the EU invoice migration and the delayed partner launch. Want the detailed breakdown? ")
SEED_BATCH = 20
READS = ("cold", "cold-container", "warm")
"""How the stores cache, cheapest last: none; one per invocation (a new container for each); one per container."""


def worker(req: dict[str, Any]) -> dict[str, Any]:
    """The seed's `decide` (examples/seed_worker.py): pause before send_email, send it once approved."""
    from seed_worker import decide

    return decide(req["trigger"], req["proposed"])


class Rig:
    """The engine's real pieces on metered clients, with step boundaries labelled."""

    def __init__(self, tenant: str, reads: str = "cold") -> None:
        from holdpoint import llm
        from holdpoint.aws.ddb.parking import ParkRecords
        from holdpoint.aws.ddb.table import Table
        from holdpoint.aws.parking import Parking
        from holdpoint.aws.queue import WorkQueue
        from holdpoint.aws.store import StateCache, Store
        from holdpoint.aws.timers import Timers
        from holdpoint.core import engine
        from holdpoint.outbound import workers
        from holdpoint.services.caller import Caller
        from holdpoint.services.runner import Runner

        self.meter = meter = Meter()
        rig = self
        self.segments: list[tuple[str, int]] = []  # (label, index of its first record)
        self.in_run = 0
        self.in_tx = 0

        class BenchStore(Store):
            def load(self, tenant: str, session_id: str, *, head_only: bool = False) -> Any:
                if rig.in_run and not rig.in_tx:
                    rig.begin("engine step")
                return super().load(tenant, session_id, head_only=head_only)

        class BenchRunner(Runner):
            def transact(self, *a: Any, **kw: Any) -> Any:
                rig.in_tx += 1
                try:
                    return super().transact(*a, **kw)
                finally:
                    rig.in_tx -= 1

            def run(self, tenant: str, session_id: str) -> int:
                rig.in_run += 1
                try:
                    return super().run(tenant, session_id)
                finally:
                    rig.in_run -= 1

            @property
            def parks(self) -> Any:
                parks = super().parks
                start = parks.start

                def labelled(state: Any, interrupt: Any) -> None:  # a park is a step of its own
                    rig.relabel("start_park")
                    start(state, interrupt)

                parks.start = labelled  # type: ignore[method-assign]
                return parks

            def handle(self, message: Any) -> None:
                how = "conditional write of the token" if message.KIND == "park" else "transact"
                rig.begin(f"{message.KIND} message ({how})")
                super().handle(message)

        original = engine.next_work

        def next_work(state: Any, *args: Any, **kwargs: Any) -> Any:
            work = original(state, *args, **kwargs)
            if rig.in_run and not rig.in_tx:
                if work is None:
                    rig.relabel("idle check (nothing due)")
                elif work.kind == "deliver" and work.id in state.decisions:
                    rig.relabel(f"deliver {state.decisions[work.id].trigger.get('type')}")
                else:
                    rig.relabel(work.kind)
            elif not rig.in_tx and work is not None and work.kind == "deliver" and rig.segments \
                    and rig.segments[-1][0] == "wake message (transact)":  # DecisionSteps.wake delivers in its commit
                rig.relabel(f"wake message + deliver {state.decisions[work.id].trigger.get('type')} (one commit)")
            return work

        engine.next_work = next_work  # the Runner calls engine.next_work through the module
        import boto3

        ddb = meter.attach(boto3.client("dynamodb"))
        # The engine's container and the API's are two: each keeps its own cache, or none (cold).
        self.reads = reads
        self.store = BenchStore(client=ddb, cache=StateCache() if reads != "cold" else False)
        self.api_store = Store(client=ddb, cache=StateCache() if reads != "cold" else False)
        self.probe = Store(cache=False)  # unmetered reads for the bench's own checks
        self.queue = WorkQueue(client=meter.attach(boto3.client("sqs")))
        self.parking = Parking(client=meter.attach(boto3.client("stepfunctions")), queue=self.queue,
                               records=ParkRecords(Table(self.store.table, ddb)))
        self.runner = BenchRunner(self.store, self.parking, self.queue, Timers(), worker=workers.decide,
                                  llm=llm.complete)
        self.caller = Caller(tenant, "user-1", "client")
        self.tenant = tenant
        name = f"bench-{tenant}"
        workers.register(name, worker)
        self.api_store.put_agent(tenant, "assistant", {"worker": {"python": name}, "tools": TOOLS,
                                                   "llm": {"provider": "scripted", "script": SCRIPT}})
        self.session_id: str | None = None
        self.meter.take()

    # segments --------------------------------------------------------------------------
    def begin(self, label: str) -> None:
        self.meter.label = label
        self.segments.append((label, len(self.meter.records)))

    def relabel(self, label: str) -> None:
        start = self.segments[-1][1]
        self.segments[-1] = (label, start)
        self.meter.label = label
        for rec in self.meter.records[start:]:
            rec.label = label

    def collect(self) -> list[tuple[str, Totals]]:
        recs = self.meter.take()
        out = []
        bounds = [s for _, s in self.segments] + [len(recs)]
        for (label, start), end in zip(self.segments, bounds[1:], strict=False):
            out.append((label, Totals.of(recs[start:end])))
        self.segments = []
        return out

    # driving: each method below is one Lambda invocation ------------------------------------
    def invocation(self) -> None:
        """A Lambda invocation starts. In `cold-container` it runs on a new container: its store
        starts with an empty cache, exactly as `assembly` builds one (the other modes keep theirs)."""
        from holdpoint.aws.store import StateCache

        if self.reads == "cold-container":
            self.store.cache = StateCache()
            self.api_store.cache = StateCache()

    def submit(self, text: str) -> None:
        from holdpoint.core.protocols.client import ClientMessageInput
        from holdpoint.services import sessions

        self.invocation()
        inp = ClientMessageInput.model_validate({"type": "client.message", "agent_id": "assistant",
                                                 "message": {"role": "user", "content": text}})
        self.begin("API: client.message (submit)")
        out = sessions.submit(self.api_store, self.queue, self.caller, self.session_id, inp)
        self.session_id = out.session_id

    def run(self) -> None:
        """The `kick` message the submit queued (moto in-process runs no event source mapping)."""
        assert self.session_id
        self.invocation()
        self.runner.run(self.tenant, self.session_id)

    def state(self) -> Any:
        assert self.session_id
        return self.probe.load(self.tenant, self.session_id)

    def play_park(self) -> str:
        """ParkBranch's waitForTaskToken message (moto in-process runs no state machine)."""
        state = self.state()
        (interrupt,) = [i for i in state.interrupts.values() if i.status == "open"]
        # A real task token is an opaque string of several hundred bytes; use a realistic length.
        token = ("AQCEAAAAKgAAAAMAAAAA" + interrupt.interrupt_id * 40)[:680]
        from holdpoint.core.messages import Park

        self.meter.take()
        self.invocation()
        self.runner.handle(Park(self.tenant, self.session_id or "", interrupt.interrupt_id, token,
                                interrupt.generation))
        return interrupt.interrupt_id

    def resume(self, interrupt_id: str) -> Resumed:
        from holdpoint.services.resume import resume

        assert self.session_id
        self.invocation()
        self.begin("API: resume (conditional write, wake message, SendTaskSuccess)")
        return resume(self.api_store, self.parking, self.caller, self.session_id, interrupt_id,
                      {"status": "resolved", "payload": {"approved": True}, "approved": True})

    def wake(self, interrupt_id: str) -> None:
        from holdpoint.core.messages import Wake

        self.invocation()
        self.runner.handle(Wake(self.tenant, self.session_id or "", interrupt_id, "resumed"))


# --------------------------------------------------------------------------- tree building


def seed_tree(rig: Rig, n: int) -> None:
    """Create the session through the API (first turn: 2 nodes), then append to n nodes (through
    the API's store, which keeps the header's `sum`), then let the engine load it once: a warm
    engine container has served the session before."""
    rig.submit("say hi")
    rig.run()
    assert rig.session_id
    while True:
        state = rig.api_store.load(rig.tenant, rig.session_id)
        have = len(state.tree.nodes)
        if have >= n:
            break
        for i in range(min(SEED_BATCH, n - have)):
            k = have + i
            role = "user" if k % 2 == 0 else "assistant"
            text = (USER_TEXT if role == "user" else ASSISTANT_TEXT) + f"[{k}]"
            state.add_node(f"msg_seed_{k:05d}", state.tree.head_id, {"role": role, "content": text})
        rig.api_store.commit(state)
    rig.store.load(rig.tenant, rig.session_id)
    rig.meter.take()
    rig.segments = []


def history_tree(rig: Rig, n: int) -> None:
    """Build the tree by driving real turns (2 nodes each), leaving all their history behind."""
    rig.submit("say hi")
    rig.run()
    while len(rig.state().tree.nodes) < n:
        rig.submit("say hi")
        rig.run()
    assert rig.session_id
    rig.store.load(rig.tenant, rig.session_id)
    rig.meter.take()
    rig.segments = []


# --------------------------------------------------------------------------- scenarios


def measure_size(n: int, build: str, reads: str = "cold") -> dict[str, Any]:
    # One length of tenant id at every N and in every mode (each measure() has its own moto): the
    # tenant is in an interrupt item's keys several times, and that item sits near DynamoDB's 1 KB
    # write unit, so a longer id would move the item across it and the figures between sizes.
    rig = Rig(tenant=f"{build[0]}{n:07d}", reads=reads)
    t0 = time.perf_counter()
    (seed_tree if build == "seeded" else history_tree)(rig, n)
    build_secs = time.perf_counter() - t0
    state = rig.state()
    nodes = len(state.tree.nodes)
    partition_items = 1 + len(state.tree.nodes) + len(state.calls) + len(state.decisions) + len(state.turns) + len(
        state.interrupts)

    rig.submit("say hi")
    rig.run()
    plain = rig.collect()

    rig.submit("please email bob the figures")
    rig.run()
    raise_steps = rig.collect()
    iid = rig.play_park()
    park = rig.collect()

    from holdpoint.services.resume import Resumed

    out = rig.resume(iid)
    assert out == Resumed(iid, noop=False), out
    resume_api = rig.collect()

    rig.wake(iid)
    wake = rig.collect()
    final = rig.state()
    turn = final.turns[final.header.last_turn]
    assert turn.status == "done", turn
    return {
        "n": n, "build": build, "reads": reads, "nodes_at_start": nodes, "partition_items_at_start": partition_items,
        "build_secs": round(build_secs, 2),
        "plain_turn": [(label, t.as_dict()) for label, t in plain],
        "interrupt_turn": [(label, t.as_dict()) for label, t in raise_steps],
        "park": [(label, t.as_dict()) for label, t in park],
        "resume_api": [(label, t.as_dict()) for label, t in resume_api],
        "wake": [(label, t.as_dict()) for label, t in wake],
    }


def measure(sizes: list[int], build: str = "seeded", reads: str = "cold") -> list[dict[str, Any]]:
    assert reads in READS, reads
    with mocked_aws():
        return [measure_size(n, build, reads) for n in sizes]


# --------------------------------------------------------------------------- reporting

ENGINE_PHASES = ("plain_turn", "interrupt_turn", "park", "wake")


def is_engine_step(label: str) -> bool:
    return not label.startswith("API") and not label.startswith("idle")


def engine_steps(run: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(label, t) for phase in ENGINE_PHASES for label, t in run[phase] if is_engine_step(label)]


def mean_step(run: dict[str, Any]) -> dict[str, float]:
    steps = [t for _, t in engine_steps(run)]
    keys = ("ddb_write_requests", "ddb_write_bytes", "ddb_items_written", "wru", "ddb_read_requests",
            "ddb_read_bytes", "ddb_items_read", "rru")
    return {k: sum(s[k] for s in steps) / len(steps) for k in keys} | {"steps": len(steps)}


def sum_phase(run: dict[str, Any], phases: tuple[str, ...]) -> dict[str, Any]:
    agg: dict[str, Any] = {"requests": {}}
    for phase in phases:
        for _, t in run[phase]:
            for k, v in t.items():
                if k in ("requests", "wru_by_kind"):
                    agg.setdefault(k, {})
                    for op, c in v.items():
                        agg[k][op] = agg[k].get(op, 0) + c
                elif k == "max_item":
                    agg[k] = max(agg.get(k, 0), v)
                else:
                    agg[k] = agg.get(k, 0) + v
    return agg


def delivering(run: dict[str, Any]) -> dict[str, float]:
    """Mean reads of the engine steps that deliver a decision (the worker needs the branch)."""
    steps = [t for label, t in engine_steps(run) if label.startswith("deliver")]
    keys = ("ddb_read_requests", "ddb_read_bytes", "ddb_items_read", "rru")
    return {k: sum(s[k] for s in steps) / len(steps) for k in keys} | {"steps": len(steps)}


def reads_by_mode(modes: dict[str, list[dict[str, Any]]]) -> str:
    """Read bytes and RRU per delivering step and per engine step in each READS mode, side by side."""
    sizes = [r["n"] for r in modes["cold"]]
    rows = []
    for name, per in (("delivering step", delivering), ("engine step (all)", mean_step)):
        for key, unit in (("ddb_read_bytes", "read bytes"), ("rru", "RRU"), ("ddb_read_requests", "requests")):
            for mode, runs in modes.items():
                means = [per(r) for r in runs]
                rows.append([f"{name}: {unit}, {mode}"] + [f"{m[key]:,.1f}" for m in means]
                            + [ratio(means[-1][key], means[0][key])])
    verdict = [delivering(r)["ddb_read_bytes"] for r in modes["warm"]]
    bar = "PASS" if verdict[-1] <= 2 * verdict[0] else "MISS"
    return (table(["per step (mean)"] + [f"N={n}" for n in sizes] + [f"{sizes[-1]}/{sizes[0]}"], rows,
                  f"\n=== Reads per step by cache mode: {', '.join(modes)} "
                  f"({delivering(modes['cold'][0])['steps']} delivering steps of the "
                  f"{mean_step(modes['cold'][0])['steps']} engine steps) ===")
            + f"\nwarm delivering step read bytes {sizes[-1]} vs {sizes[0]} nodes: "
            f"{verdict[-1] / verdict[0]:.2f}x (bar: <= 2x) -> {bar}")


def _kb(b: float) -> str:
    return f"{b / 1024:.1f}"


def report(runs: list[dict[str, Any]], title: str) -> str:
    sizes = [r["n"] for r in runs]
    lo, hi = runs[0], runs[-1]
    out = [f"\n=== {title} ==="]
    out.append(table(["tree", "nodes", "partition items", "build s"],
                     [[f"N={r['n']}", r["nodes_at_start"], r["partition_items_at_start"], r["build_secs"]]
                      for r in runs]))

    def per_step(cell: Callable[[dict[str, Any]], str], bytes_key: str) -> list[list[Any]]:
        """One row per step of every phase: `cell` for each N, then the N-max/N-min bytes ratio."""
        rows = []
        for phase in ("plain_turn", "interrupt_turn", "park", "resume_api", "wake"):
            for i, (label, _) in enumerate(lo[phase]):
                per = [r[phase][i][1] if i < len(r[phase]) and r[phase][i][0] == label else None for r in runs]
                a, b = per[-1], per[0]
                rows.append([f"{phase}: {label}"] + ["?" if t is None else cell(t) for t in per]
                            + ["?" if a is None or b is None else ratio(a[bytes_key], b[bytes_key])])
        return rows

    writes = per_step(lambda t: f"{t['ddb_write_requests']} / {t['ddb_items_written']} / "
                                f"{_kb(t['ddb_write_bytes'])} / {t['wru']:.0f}", "ddb_write_bytes")
    out.append(table(["step"] + [f"N={n} req/items/KB/WRU" for n in sizes] + [f"bytes {sizes[-1]}/{sizes[0]}"],
                     writes, "DynamoDB WRITES per step "
                     "(write requests / items written / request KB / write request units)"))
    reads = per_step(lambda t: f"{t['ddb_read_requests']} / {t['ddb_items_read']} / "
                               f"{_kb(t['ddb_read_bytes'])} / {t['rru']:.1f}", "ddb_read_bytes")
    out.append(table(["step"] + [f"N={n} req/items/KB/RRU" for n in sizes] + [f"bytes {sizes[-1]}/{sizes[0]}"],
                     reads, "DynamoDB READS per step "
                     "(read requests / items read / response KB / read request units)"))

    # summary: mean per engine step
    means = [mean_step(r) for r in runs]
    rows = []
    for key, name in (("ddb_write_requests", "write requests"), ("ddb_items_written", "items written"),
                      ("ddb_write_bytes", "write request bytes"), ("wru", "write request units"),
                      ("ddb_read_requests", "read requests"), ("ddb_items_read", "items read"),
                      ("ddb_read_bytes", "read response bytes"), ("rru", "read request units")):
        rows.append([name] + [f"{m[key]:.1f}" for m in means] + [ratio(means[-1][key], means[0][key])])
    out.append(table(["per engine step (mean)"] + [f"N={n}" for n in sizes] + [f"{sizes[-1]}/{sizes[0]}"], rows,
                     f"Mean per engine step over the {means[0]['steps']} engine steps of a plain turn, an interrupt "
                     "turn, the park message and the wake (bar: writes within 1.5x)"))
    w_req = means[-1]["ddb_write_requests"] / means[0]["ddb_write_requests"]
    w_b = means[-1]["ddb_write_bytes"] / means[0]["ddb_write_bytes"]
    verdict = "PASS" if max(w_req, w_b) < 1.5 else "MISS"
    out.append(f"writes per step {sizes[-1]} vs {sizes[0]} nodes: requests {w_req:.2f}x, bytes {w_b:.2f}x -> {verdict}")
    worst = max(((label, t["ddb_write_bytes"] / max(1, b["ddb_write_bytes"]))
                 for phase in ("plain_turn", "interrupt_turn", "park", "resume_api", "wake")
                 for (label, t), (_, b) in zip(hi[phase], lo[phase], strict=False)), key=lambda x: x[1])
    out.append(f"worst single step by write bytes: {worst[0]!r} {worst[1]:.2f}x")

    # where the write bytes go
    kinds = {"H": "header", "N": "nodes", "Q": "decisions", "K": "calls", "T": "turns", "I": "interrupts",
             "E": "events"}
    rows = []
    for phase, label in (("plain_turn", "API: client.message (submit)"), ("plain_turn", "deliver client.messages"),
                         ("plain_turn", "deliver llm.finished")):
        for r in runs:
            t = next(t for lab, t in r[phase] if lab == label)
            rows.append([label, f"N={r['n']}"] + [f"{t['wru_by_kind'].get(k, 0):.0f}" for k in kinds])
    out.append(table(["step", "tree"] + list(kinds.values()), rows,
                     "Write request units by item kind (transactional: 2 per KB per item)"))

    # resume API side
    rows = []
    for r in runs:
        t = sum_phase(r, ("resume_api",))
        ops = ", ".join(f"{op} x{c}" for op, c in sorted(t["requests"].items()))
        rows.append([f"N={r['n']}", ops, t["ddb_write_requests"], t["sfn_requests"], t["ddb_read_requests"],
                     t["ddb_write_bytes"], t["wru"] + t["gsi_wru"]])
    out.append(table(["tree", "requests", "DDB writes", "SFN calls", "DDB reads", "write bytes", "WRU (+GSI)"], rows,
                     "Resume, API side alone (one consistent read, one conditional write, the wake message, "
                     "one SendTaskSuccess)"))

    # whole phases
    rows = []
    for r in runs:
        for phases, name in ((("plain_turn",), "plain turn (API + engine)"),
                             (("interrupt_turn", "park"), "interrupt turn up to parked"),
                             (("resume_api",), "resume API side"),
                             (("wake",), "wake to turn end")):
            t = sum_phase(r, phases)
            rows.append([f"N={r['n']}", name, t["ddb_write_requests"], t["ddb_read_requests"], t["sqs_requests"],
                         t["sfn_requests"], _kb(t["ddb_write_bytes"]), _kb(t["ddb_read_bytes"]),
                         f"{t['wru']:.0f}+{t['gsi_wru']:.0f}", f"{t['rru']:.1f}", _kb(t["max_item"])])
    out.append(table(["tree", "phase", "DDB W", "DDB R", "SQS", "SFN", "W KB", "R KB", "WRU+GSI", "RRU",
                      "largest item KB"], rows, "Per phase totals"))
    return "\n".join(out)


def item_limit_projection(runs: list[dict[str, Any]]) -> str:
    """The submit step writes the `client.messages` decision whose trigger holds the whole active path;
    fit its growth and project when it crosses DynamoDB's 400 KB item limit."""
    pts = [(r["nodes_at_start"], sum_phase(r, ("plain_turn",))["max_item"]) for r in runs]
    (n0, b0), (n1, b1) = pts[0], pts[-1]
    if n1 == n0 or b1 <= b0:
        return ""
    slope = (b1 - b0) / (n1 - n0)
    sizes = ", ".join(f"N={n}: {b / 1024:.1f} KB" for n, b in pts)
    if slope < 1:
        return f"\nLargest item written in a plain turn: {sizes} -> does not grow with the active path."
    limit = 400 * 1024
    at = n0 + (limit - b0) / slope
    return (f"\nLargest item written in a plain turn: {sizes}"
            + f"\n-> grows {slope:.0f} bytes per node of the active path; crosses the 400 KB item limit at "
            f"~{at:,.0f} nodes of this size (the submit then fails: no S3 offload).")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--history-sizes", default="10,100",
                    help="tree sizes built by driving real turns (quadratic cost; '' to skip)")
    ap.add_argument("--json", help="write the raw figures here (bench/cost_model.py --from reads it)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    t0 = time.perf_counter()
    seeded = measure(sizes, "seeded")
    print(report(seeded, "Seeded trees (N nodes, linear, no other history), cold: no cache"))
    print(item_limit_projection(seeded))
    cold_container = measure(sizes, "seeded", reads="cold-container")
    print(report(cold_container, "Seeded trees, cold containers: caches emptied at the start of every invocation"))
    warm = measure(sizes, "seeded", reads="warm")
    print(report(warm, "Seeded trees, warm: the engine's and the API's stores keep their caches"))
    print(reads_by_mode({"cold": seeded, "cold-container": cold_container, "warm": warm}))
    flat = [delivering(r)["ddb_read_bytes"] for r in warm]
    if len(flat) > 1:
        figure(f"read bytes of a delivering step on a warm container, {warm[-1]['n']:,} nodes over {warm[0]['n']:,}",
               f"{flat[-1]:,.0f} / {flat[0]:,.0f} B = {flat[-1] / flat[0]:.2f}x", "<= 2x", flat[-1] <= 2 * flat[0])
    history = []
    hs = [int(s) for s in args.history_sizes.split(",") if s]
    if hs:
        history = measure(hs, "history")
        print(report(history, "History trees (N nodes built by N/2 real turns, all their records kept)"))
    print(f"\n(total {time.perf_counter() - t0:.1f}s; python {sys.version.split()[0]})")
    if args.json:
        Path(args.json).write_text(json.dumps({"seeded": seeded, "cold_container": cold_container, "warm": warm,
                                               "history": history}, indent=1))


if __name__ == "__main__":
    main()
