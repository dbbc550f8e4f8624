"""External runs, side by side in one run on the local stack: how long from a person's answer to
the run resumed, over the floor of one bare SQS round trip, and what one approval costs Holdpoint
next to what a Lambda durable function's own `wait_for_callback` costs for the same wait.

- Latency, one approval at a time: `time.perf_counter()` just before the answer's
  POST .../resume, and again where the run has resumed: inside the customer's durable function
  when `wait_for_approval` returns (a `durable_function` target: the notifier's callback through
  Lambda's API, the emulator's replay), or in the SDK's receiver when the signed delivery arrives
  (a `url` target). The floor: SendMessage then a long-poll ReceiveMessage on a FIFO queue of the
  same moto server, sampled before each answer.
- Cost of one external approval (a durable function's run, raised and answered): every AWS
  request the handlers make between the raise and the callback, counted from botocore's events
  (DynamoDB request units from item sizes, bench/_common.Meter), every invocation of Holdpoint's
  functions, the two HTTP API requests (raise, answer), priced with bench/cost_model.PRICES. Idle
  long polls are left out (a fixed cost per queue), as cost_model leaves them out; a work message
  is priced as its send, receive and delete. Lambda durations are assumed (`--ms`), not measured.
- The durable function's own wait: the operations its history records for the wait (the
  callback and its submitter step) at $8 per million, and the second invocation the wait costs
  (the replay); its data written and retained (cents per GB) is left out.

    .venv/bin/python bench/external_runs.py [--n 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resume_latency import ROOT, Api, SqsFloor, start_stack  # noqa: E402  (sets sys.path and credentials)

sys.path.insert(0, str(ROOT / "sdk" / "src"))
import boto3  # noqa: E402
from _common import Meter, Totals, table  # noqa: E402
from cost_model import PRICES, SQS_REQUESTS_PER_MESSAGE  # noqa: E402

IDLE = ("ReceiveMessage", "GetRecords", "GetShardIterator", "DescribeStream", "ListStreams", "ListSchedules")
"""What the pollers, the stream readers and the local scheduler ask for while nothing happens."""
SECRET_ENV = "HOLDPOINT_E2E_WORKER_SECRET"
"""The url target's signing secret, by reference (the local stack's functions read it from this process)."""
DURABLE_OPERATION = 8.00 / 1e6
"""A durable function's operation (a step, a wait, a callback), USD (Lambda durable functions' list price)."""


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


class Rig:
    """The stack, the agent with both targets, the customer's durable function and the URL receiver."""

    def __init__(self, meter: Meter) -> None:
        from holdpoint_local.moto.server import set_durable_endpoint
        from holdpoint_sdk.client import Client
        from holdpoint_sdk.runs import Deliveries
        from tests.durable import DurableHost, Mailer

        self.meter = meter
        self.stack = start_stack()
        self.api = Api(self.stack)
        self.floor = SqsFloor(self.stack)
        self.resumed: dict[str, float] = {}
        self.mailer = Mailer(Client(self.stack.base_url, self.stack.api_key))
        self.sessions: dict[str, str] = {}
        raise_run = self.mailer.client.raise_run

        def raising(run_id: str, body: dict[str, Any]) -> dict[str, Any]:
            out = raise_run(run_id, body)  # the run's session, read off the raise (no API read metered)
            self.sessions[run_id] = str(out["session_id"])
            return out

        self.mailer.client.raise_run = raising  # type: ignore[method-assign]
        run = self.mailer.run

        def timed(event: dict[str, Any], context: Any) -> dict[str, Any]:
            out = run(event, context)  # returns once the wait is answered (on the replay)
            self.resumed.setdefault(event["run_id"], time.perf_counter())
            return out

        from aws_durable_execution_sdk_python import durable_execution
        self.host = DurableHost(durable_execution(timed))
        threading.Thread(target=self.host.server.serve_forever, daemon=True).start()
        set_durable_endpoint(str(self.stack.moto_endpoint), self.host.url)
        self.secret = os.environ.setdefault(SECRET_ENV, uuid.uuid4().hex)
        def received(one: Any) -> None:
            self.resumed.setdefault(one.run_id, time.perf_counter())

        self.deliveries = Deliveries(received)
        self.receiver = self.deliveries.serve(self.secret)
        self.api.ok("PUT", "/v1/agents/mailer", {"run_targets": {
            "mailbox": {"durable_function": True},
            "hook": {"url": f"http://127.0.0.1:{self.receiver.server_address[1]}/", "secret": f"env:{SECRET_ENV}"}}})

    def durable_run(self) -> tuple[str, str, str]:
        run_id = f"dex-{uuid.uuid4().hex[:12]}"
        arn = self.host.start(json.dumps({"run_id": run_id, "to": "bob@example.com"}), run_id)
        self.wait(lambda: "InvocationCompleted" in self.host.history(arn) or None, f"{run_id} suspended")
        return run_id, arn, self.sessions[run_id]

    def quiet(self, for_secs: float = 0.3, timeout: float = 30.0) -> None:
        """Until the stack has made no AWS request but idle polls for `for_secs`."""
        seen, since, deadline = -1, time.monotonic(), time.monotonic() + timeout
        while time.monotonic() - since < for_secs:
            if time.monotonic() > deadline:
                busy_ops = [f"{r.service}:{r.op}" for r in self.meter.records[-20:]]
                raise TimeoutError(f"the stack stays busy: {busy_ops}")
            busy = sum(1 for r in self.meter.records if r.op not in IDLE)
            if busy != seen:
                seen, since = busy, time.monotonic()
            time.sleep(0.01)

    def url_run(self) -> tuple[str, str]:
        from holdpoint_sdk.client import Client
        from holdpoint_sdk.runs import Ask, ask

        run_id = f"url-{uuid.uuid4().hex[:12]}"
        raised = ask(Client(self.stack.base_url, self.stack.api_key), run_id, "mailer",
                     [Ask("send", "Send it?", tool="send_email", arguments={"to": "bob"})], target="hook")
        return run_id, str(raised["session_id"])

    def answer(self, run_id: str, session_id: str) -> float:
        """Seconds from the answer's POST to the run resumed."""
        t0 = time.perf_counter()
        self.api.ok("POST", f"/v1/sessions/{session_id}/interrupts/send/resume", {"payload": {"approved": True}})
        return float(self.wait(lambda: self.resumed.get(run_id), f"{run_id} resumed")) - t0

    @staticmethod
    def wait(probe: Any, what: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                found = probe()
            except Exception:  # noqa: BLE001 - not there yet (a 404 while the run is raised)
                found = None
            if found:
                return found
            time.sleep(0.002)
        raise TimeoutError(what)

    def invocations(self) -> dict[str, int]:
        return {name: f.invocations for name, f in self.stack.functions.items()}


def holdpoint_cost(totals: Totals, invoked: dict[str, int], memory: dict[str, int],
                   ms: float) -> dict[str, tuple[float, float]]:
    """One approval, by component: (units, USD)."""
    requests = totals.requests
    messages = requests.get("sqs:SendMessage", 0)
    starts = requests.get("sfn:StartExecution", 0)
    puts = requests.get("eventbridge:PutEvents", 0)
    calls = sum(invoked.values())
    gb_s = sum(n * memory.get(name, 512) / 1024 * ms / 1000 for name, n in invoked.items())
    wru = totals.wru + totals.gsi_wru
    return {
        "http api requests (the raise, the answer)": (2, 2 * PRICES["http_api_request"]),
        "lambda requests": (calls, calls * PRICES["lambda_request"]),
        f"lambda compute, GB-s ({ms:g} ms each, assumed)": (gb_s, gb_s * PRICES["lambda_gb_second_arm64"]),
        "dynamodb writes, WRU (GSIs included)": (wru, wru * PRICES["ddb_wru"]),
        "dynamodb reads, RRU": (totals.rru, totals.rru * PRICES["ddb_rru"]),
        f"sqs fifo messages (x{SQS_REQUESTS_PER_MESSAGE} requests)":
            (messages, messages * SQS_REQUESTS_PER_MESSAGE * PRICES["sqs_fifo_request"]),
        "step functions transitions": (starts, starts * PRICES["sfn_standard_transition"]),
        "eventbridge puts": (puts, puts * PRICES["eventbridge_event"]),
    }


def durable_cost(operations: float, ms: float, memory_mb: int) -> dict[str, tuple[float, float]]:
    gb_s = memory_mb / 1024 * ms / 1000
    wait = "durable operations of the wait (its history's, the send_email step not counted)"
    return {wait: (operations, operations * DURABLE_OPERATION),
            "lambda requests (the replay the wait costs)": (1, PRICES["lambda_request"]),
            f"lambda compute, GB-s (the replay, {ms:g} ms at {memory_mb} MB, assumed)":
                (gb_s, gb_s * PRICES["lambda_gb_second_arm64"])}


def rows_of(parts: dict[str, tuple[float, float]]) -> list[list[str]]:
    return [[k, f"{units:.4g}", f"${usd * 1e6:,.2f}"] for k, (units, usd) in parts.items()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20, help="approvals timed per target")
    ap.add_argument("--ms", type=float, default=60.0, help="assumed duration of each Holdpoint invocation")
    ap.add_argument("--function-ms", type=float, default=100.0, help="assumed duration of the durable replay")
    ap.add_argument("--function-mb", type=int, default=512, help="the durable function's memory")
    a = ap.parse_args()
    os.environ.setdefault(SECRET_ENV, uuid.uuid4().hex)  # before the stack starts: its functions read it
    meter = Meter()
    boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None

    def metered(context: dict[str, Any], **kw: Any) -> None:
        meter._before(context=context, **kw)
        if not isinstance(context.get("bench_req"), bytes):  # a streamed body (S3's, at provisioning)
            context["bench_req"] = b""

    boto3.DEFAULT_SESSION.events.register("before-call", metered)
    boto3.DEFAULT_SESSION.events.register("after-call", meter._after)
    rig = Rig(meter)
    memory = {name: 1024 if "Engine" in name else 512 for name in rig.stack.functions}
    try:
        floor: list[float] = []
        durable: list[float] = []
        url: list[float] = []
        costs: list[dict[str, tuple[float, float]]] = []
        operations: list[int] = []
        for i in range(a.n + 1):  # the first of each is a warm-up
            run_id2, sid2 = rig.url_run()
            floor.append(rig.floor.round_trip())
            t_url = rig.answer(run_id2, sid2)
            rig.quiet()
            meter.take()
            before = rig.invocations()
            run_id, arn, sid = rig.durable_run()
            t = rig.answer(run_id, sid)
            rig.host.runner.wait_for_result(arn, timeout=60)
            rig.quiet()
            history = rig.host.runner.get_execution_history(arn).events
            raise_recs = meter.take()
            invoked = {k: v - before.get(k, 0) for k, v in rig.invocations().items() if v - before.get(k, 0)}
            if i == 0:
                continue
            durable.append(t)
            url.append(t_url)
            costs.append(holdpoint_cost(Totals.of(raise_recs), invoked, memory, a.ms))
            operations.append(len({e.operation_id for e in history if e.operation_id and e.name != "send_email"
                                   and e.event_type in ("CallbackStarted", "StepStarted", "ContextStarted")}))
    finally:
        rig.receiver.shutdown()
        rig.host.server.shutdown()
        rig.api.close()
        rig.stack.stop()
    f = _median_ms(floor)
    print(table([f"path (median of {a.n})", "ms", "x SQS floor"], [
        ["SQS floor: SendMessage + long-poll ReceiveMessage", f"{f:.1f}", "1.0"],
        ["answer -> durable function resumed (callback, replay)", f"{_median_ms(durable):.1f}",
         f"{_median_ms(durable) / f:.1f}"],
        ["answer -> url target's delivery received", f"{_median_ms(url):.1f}", f"{_median_ms(url) / f:.1f}"],
    ], "From a person's answer to the run resumed, local stack"))
    print()
    mean = {k: (statistics.mean(c[k][0] for c in costs), statistics.mean(c[k][1] for c in costs))
            for k in costs[0]}
    ours = sum(usd for _, usd in mean.values())
    theirs_parts = durable_cost(statistics.mean(operations), a.function_ms, a.function_mb)
    theirs = sum(usd for _, usd in theirs_parts.values())
    rows = rows_of(mean) + [[f"HOLDPOINT: one external approval (mean of {a.n})", "", f"${ours * 1e6:,.2f}"]]
    rows += rows_of(theirs_parts) + [["DURABLE FUNCTION: its own wait_for_callback", "", f"${theirs * 1e6:,.2f}"],
                                     ["ratio Holdpoint / durable wait", "", f"{ours / theirs:.1f}x"]]
    print(table(["component", "units each", "$ per million"], rows,
                "Cost of one approval, per million approvals (prices: bench/cost_model.PRICES)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
