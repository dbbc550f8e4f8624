"""Dollars per million interrupts raised and resumed, from the request counts bench/ddb_per_step.py measures.

    python bench/cost_model.py [--reads cold-container|cold|warm]  # measures all three first (~3 minutes)
    python bench/cost_model.py --from FILE.json      # reuses `ddb_per_step.py --json FILE.json`

Reads are priced three ways (`ddb_per_step.READS`), all measured: `cold-container` (the default and
the headline: every Lambda invocation on a new container, so the first load of each invocation
reads the whole session and later loads in it only what changed: the worst a deployment can
meet), `cold` (every load reads the whole session, even right after the invocation's own commit:
a pessimistic bound the engine cannot reach) and `warm` (containers keep their caches). The
detailed tables are for `--reads`; the last table puts the three totals side by side against
the targets.

Prices are AWS us-east-1 list prices as of the author's knowledge (early 2025), first pricing
tier, no free tier. They change: re-check them at https://aws.amazon.com/pricing before quoting.
Lambda durations are assumptions (flags below), not measurements: moto's in-process timings
say nothing about Lambda's.

Two views, each at every measured tree size:

* marginal interrupt: only the work that exists because a worker paused and a person resumed:
  the interrupt item (+ its Inbox GSI entry and `session.interrupted` event) in the decision
  commit that raised it, the `start_park` engine step (StartExecution), the `park` queue message
  (engine invocation storing the task token), the resume (API Gateway, authorizer, resume
  Lambda: one UpdateItem + one SendTaskSuccess), the ParkBranch transitions, and the `wake`
  message up to and including the `interrupt.resumed` delivery (one extra decision round trip).
  The rest of the turn would have run without the interrupt and is excluded.
* whole approval turn: everything measured from the `client.message` submit to the end of the
  turn (user message -> LLM asks for a tool -> worker pauses -> resume -> tool result -> LLM
  answers), LLM tokens excluded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table  # noqa: E402
from figures import figure  # noqa: E402

PRICES = {  # USD, us-east-1, list prices as of early 2025 (author's knowledge; re-check)
    "lambda_request": 0.20 / 1e6,             # per invocation
    "lambda_gb_second_arm64": 0.0000133334,   # per GB-second, arm64, first 7.5 B GB-s/month
    "ddb_wru": 0.625 / 1e6,                   # on-demand write request unit (after the Nov 2024 cut)
    "ddb_rru": 0.125 / 1e6,                   # on-demand read request unit
    "sqs_fifo_request": 0.50 / 1e6,           # per request (64 KB chunk)
    "sfn_standard_transition": 0.025 / 1e3,   # per state transition
    "http_api_request": 1.00 / 1e6,           # per request (512 KB increment), first 300 M/month
    "eventbridge_event": 1.00 / 1e6,          # per custom event put on a bus (64 KB chunk)
}
PRICES_AS_OF = "early 2025 (model knowledge; not checked against the live price list)"

# ParkBranch (template.yaml): Park (sqs:sendMessage.waitForTaskToken) -> end; the resume puts the
# wake on the work queue itself. AWS bills Standard workflows per state transition, counted "each
# time a step of your workflow is executed", retries included (https://aws.amazon.com/step-functions/pricing/).
# On the success path one step executes: Park (entered once; waiting in it is free). Starting and
# ending an execution are not steps (the page does not say either way; --sfn-transitions 2 prices
# the start). An expiry executes Park and Expire: 2, on the expiry path only.
SFN_TRANSITIONS = 1
TARGETS = {10: 75.0, 1000: 90.0}  # $ per million interrupts raised and resumed, at N nodes
# SQS FIFO requests per work message: SendMessage (the park by ParkBranch, the wake by the resume)
# + ReceiveMessage + DeleteMessage (the event source mapping; batching can only lower the last two).
# Idle long polls are a fixed cost per queue, not per interrupt, and are left out.
SQS_REQUESTS_PER_MESSAGE = 3
# The notification outbox (docs/NOTIFICATIONS.md) for an agent with no `notify` entries: the bus gets
# interrupt.raised and interrupt.resolved; the notifier is invoked for the raised event, the park's
# change of the open interrupt item (filtered in, dropped) and the resolved event, unless a batch
# carries two of them; each event reads the session's head (one small Query). Stream reads by
# Lambda are free. Webhook and Slack deliveries are per declared entry and left out.
NOTIFY_EVENTS = 2
NOTIFIER_INVOCATIONS = 3
READS_KEYS = {"cold-container": "cold_container", "cold": "seeded", "warm": "warm"}
"""Each reads mode (the headline first) and where `ddb_per_step.py --json` keeps its runs."""


# The wake up to and including the `interrupt.resumed` delivery: one step when the wake delivers in
# the commit that records it (DecisionSteps.wake), two when the wake commits alone first.
WAKE_STEPS = ("wake message + deliver interrupt.resumed (one commit)", "wake message (transact)",
              "deliver interrupt.resumed")


def _find(steps: list[list[Any]], label: str) -> dict[str, Any]:
    for lab, t in steps:
        if lab == label:
            return t
    raise KeyError(label)


def _sum(steps: list[dict[str, Any]]) -> dict[str, float]:
    return {k: sum(s[k] for s in steps) for k in ("wru", "gsi_wru", "rru", "ddb_write_requests",
                                                   "ddb_read_requests", "sqs_requests", "sfn_requests")}


def marginal(run: dict[str, Any], a: argparse.Namespace) -> dict[str, Any]:
    raise_step = _find(run["interrupt_turn"], "deliver tool.execute")
    raise_wru = raise_step["wru_by_kind"].get("I", 0) + raise_step["gsi_wru"] + 2  # + the event (< 1 KB, x2)
    steps = [_find(run["interrupt_turn"], "start_park")] + [t for _, t in run["park"]] + \
        [t for _, t in run["resume_api"]] + [t for lab, t in run["wake"] if lab in WAKE_STEPS]
    s = _sum(steps)
    wru = s["wru"] + s["gsi_wru"] + raise_wru
    auth = 1 - a.authorizer_cache_hit  # authorizer invocations per resume (a cache hit invokes nothing)
    rru = s["rru"] + 0.5 * auth  # the authorizer's API-key GetItem (eventually consistent, < 4 KB)
    gb_s = ((a.start_park_ms + a.park_ms + a.wake_ms) * a.engine_mb + a.resume_ms * a.api_mb
            + auth * a.authorizer_ms * a.api_mb) / 1000 / 1024
    invocations = 3 + auth  # engine park + engine wake + resume + authorizer
    sqs = 2 * a.sqs_requests_per_message  # park and wake messages
    return {
        "lambda requests": (invocations, invocations * PRICES["lambda_request"]),
        "lambda compute": (gb_s, gb_s * PRICES["lambda_gb_second_arm64"]),
        "dynamodb writes (WRU)": (wru, wru * PRICES["ddb_wru"]),
        "dynamodb reads (RRU)": (rru, rru * PRICES["ddb_rru"]),
        "sqs fifo requests": (sqs, sqs * PRICES["sqs_fifo_request"]),
        "step functions transitions": (a.sfn_transitions, a.sfn_transitions * PRICES["sfn_standard_transition"]),
        "api gateway http requests": (1, PRICES["http_api_request"]),
        **notifications(a),
    }


def notifications(a: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """The outbox's lines: the notifier's invocations and head reads, and the events on the bus."""
    gb_s = a.notifier_invocations * a.notifier_ms * a.api_mb / 1000 / 1024
    rru = a.notify_events * 1.0  # the head Query of each published event (a few KB)
    return {
        "notifier lambda requests": (a.notifier_invocations, a.notifier_invocations * PRICES["lambda_request"]),
        "notifier lambda compute": (gb_s, gb_s * PRICES["lambda_gb_second_arm64"]),
        "notifier reads (RRU)": (rru, rru * PRICES["ddb_rru"]),
        "eventbridge events": (a.notify_events, a.notify_events * PRICES["eventbridge_event"]),
    }


def whole_turn(run: dict[str, Any], a: argparse.Namespace) -> dict[str, Any]:
    steps = [t for phase in ("interrupt_turn", "park", "resume_api", "wake") for _, t in run[phase]]
    s = _sum(steps)
    wru = s["wru"] + s["gsi_wru"]
    auth = 2 * (1 - a.authorizer_cache_hit)  # the submit's and the resume's authorizer invocations
    rru = s["rru"] + 0.5 * auth  # their API-key GetItems
    # submit kick + engine run (no LLM wait), park, wake + rest of the turn; API submit and resume
    gb_s = ((a.turn_engine_ms + a.park_ms + a.turn_engine_ms) * a.engine_mb
            + 2 * a.resume_ms * a.api_mb + auth * a.authorizer_ms * a.api_mb) / 1000 / 1024
    sqs = 3 * a.sqs_requests_per_message  # kick, park, wake
    invocations = 5 + auth  # 3 engine + api + resume + the authorizer's
    return {
        "lambda requests": (invocations, invocations * PRICES["lambda_request"]),
        "lambda compute": (gb_s, gb_s * PRICES["lambda_gb_second_arm64"]),
        "dynamodb writes (WRU)": (wru, wru * PRICES["ddb_wru"]),
        "dynamodb reads (RRU)": (rru, rru * PRICES["ddb_rru"]),
        "sqs fifo requests": (sqs, sqs * PRICES["sqs_fifo_request"]),
        "step functions transitions": (a.sfn_transitions, a.sfn_transitions * PRICES["sfn_standard_transition"]),
        "api gateway http requests": (2, 2 * PRICES["http_api_request"]),
        **notifications(a),
    }


def render(runs: list[dict[str, Any]], model: Any, a: argparse.Namespace, title: str) -> str:
    per = [model(r, a) for r in runs]
    rows = []
    for comp in per[0]:
        rows.append([comp] + [f"{p[comp][0]:.4g} -> ${p[comp][1] * 1e6:,.2f}" for p in per])
    rows.append(["TOTAL per million"] + [f"${sum(c[1] for c in p.values()) * 1e6:,.2f}" for p in per])
    return table(["component (units each -> $ per million)"] + [f"N={r['n']} nodes" for r in runs],
                 rows, title)


def total(run: dict[str, Any], a: argparse.Namespace) -> float:
    """The marginal interrupt's $ per million."""
    return sum(c[1] for c in marginal(run, a).values()) * 1e6


def verdict(runs: list[dict[str, Any]], a: argparse.Namespace) -> str:
    """One line per target size: the marginal cost next to its target and the ratio."""
    lines = []
    for r in runs:
        if r["n"] in TARGETS:
            cost, target = total(r, a), TARGETS[r["n"]]
            lines.append(f"cost per million interrupts at N={r['n']} ({a.reads} reads): ${cost:,.2f}  "
                         f"target <= ${target:.0f}  {cost / target:.2f}x of target  "
                         f"{'ok' if cost <= target else 'OVER'}")
    return "\n".join(lines)


def by_reads(modes: dict[str, list[dict[str, Any]]], a: argparse.Namespace) -> str:
    """The marginal total of every reads mode side by side, with its ratio to the target where there is one."""
    sizes = [r["n"] for r in next(iter(modes.values()))]
    rows = []
    for mode, runs in modes.items():
        cells = []
        for r in runs:
            cost = total(r, a)
            cells.append(f"${cost:,.2f}" + (f" ({cost / TARGETS[r['n']]:.2f}x of ${TARGETS[r['n']]:.0f})"
                                             if r["n"] in TARGETS else ""))
        rows.append([mode + (" (priced above)" if mode == a.reads else "")] + cells)
    return table(["reads"] + [f"N={n} nodes" for n in sizes], rows,
                 "Marginal cost per million interrupts by how reads are priced: cold-container (every "
                 "invocation on a new container: the headline), cold (every load reads everything: a bound), "
                 "warm (containers keep their caches)")


def per_step_cost(runs: list[dict[str, Any]]) -> str:
    from ddb_per_step import mean_step  # noqa: PLC0415

    rows = []
    for r in runs:
        m = mean_step(r)
        rows.append([f"N={r['n']}", f"{m['wru']:.1f}", f"{m['rru']:.1f}", f"${m['wru'] * PRICES['ddb_wru'] * 1e6:,.2f}",
                     f"${m['rru'] * PRICES['ddb_rru'] * 1e6:,.2f}"])
    return table(["tree", "WRU/step", "RRU/step", "writes $/M steps", "reads $/M steps"], rows,
                 "DynamoDB cost of one mean engine step")


def parser() -> argparse.ArgumentParser:
    """The model's assumptions, each a flag."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="src", help="JSON written by ddb_per_step.py --json")
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--engine-mb", type=int, default=1024, help="EngineFunction MemorySize (template.yaml)")
    ap.add_argument("--api-mb", type=int, default=512, help="Api/Resume/Authorizer MemorySize (Globals)")
    ap.add_argument("--start-park-ms", type=float, default=60, help="assumed: StartExecution + load + commit")
    ap.add_argument("--park-ms", type=float, default=80, help="assumed: park message invocation")
    ap.add_argument("--wake-ms", type=float, default=250,
                    help="assumed: the wake step (load, deliver interrupt.resumed, commit) incl. the worker round trip")
    ap.add_argument("--resume-ms", type=float, default=60, help="assumed: resume (or API) Lambda invocation")
    ap.add_argument("--authorizer-ms", type=float, default=30, help="assumed: authorizer invocation")
    ap.add_argument("--turn-engine-ms", type=float, default=600,
                    help="assumed: engine invocation running several steps, excluding LLM latency")
    ap.add_argument("--sfn-transitions", type=int, default=SFN_TRANSITIONS,
                    help="billed ParkBranch state transitions per raise+resume (steps executed: Park)")
    ap.add_argument("--sqs-requests-per-message", type=float, default=SQS_REQUESTS_PER_MESSAGE,
                    help="FIFO requests per work message: send + receive + delete")
    ap.add_argument("--authorizer-cache-hit", type=float, default=0.0,
                    help="share of requests API Gateway answers from its authorizer cache (0 with "
                         "AuthorizerCacheSeconds=0, the template's default)")
    ap.add_argument("--notify-events", type=int, default=NOTIFY_EVENTS,
                    help="events put on the bus per interrupt (raised, resolved; more with reminders)")
    ap.add_argument("--notifier-invocations", type=float, default=NOTIFIER_INVOCATIONS,
                    help="notifier invocations per interrupt (fewer when a stream batch carries two records)")
    ap.add_argument("--notifier-ms", type=float, default=40, help="assumed: one notifier invocation")
    ap.add_argument("--reads", choices=tuple(READS_KEYS), default="cold-container",
                    help="reads the detailed tables price: every invocation on a new container (the headline), "
                         "every load cold (a bound the engine cannot reach) or warm containers")
    return ap


def main() -> None:
    ap = parser()
    a = ap.parse_args()
    if a.src:
        data = json.loads(Path(a.src).read_text())
        modes = {mode: data[key] for mode, key in READS_KEYS.items() if key in data}
        if a.reads not in modes:
            ap.error(f"{a.src} has no {a.reads} runs: rerun ddb_per_step.py --json")
    else:
        from ddb_per_step import measure  # noqa: PLC0415

        sizes = [int(s) for s in a.sizes.split(",") if s]
        modes = {mode: measure(sizes, "seeded", reads=mode) for mode in READS_KEYS}
    runs = modes[a.reads]
    print(f"Prices: AWS us-east-1 list prices, {PRICES_AS_OF}; re-check before use.")
    print(table(["price", "USD"], [[k, f"{v:.10g}"] for k, v in PRICES.items()]))
    print(f"Assumptions: ParkBranch transitions per raise+resume = {a.sfn_transitions}; SQS requests per work "
          f"message = {a.sqs_requests_per_message:g}; authorizer cache hits {a.authorizer_cache_hit:.0%}; "
          f"{a.reads} reads; Lambda arm64, engine {a.engine_mb} MB, api/resume/authorizer "
          f"{a.api_mb} MB; durations (ms): start_park {a.start_park_ms:g}, park {a.park_ms:g}, wake {a.wake_ms:g}, "
          f"resume {a.resume_ms:g}, authorizer {a.authorizer_ms:g}, engine turn run {a.turn_engine_ms:g}.")
    print(render(runs, marginal, a, "Marginal cost of one interrupt raised and resumed ($ per million interrupts)"))
    print(render(runs, whole_turn, a, "Whole approval turn: submit -> pause -> resume -> turn end "
                                      "($ per million turns, LLM tokens excluded)"))
    print(per_step_cost(runs))
    print(by_reads(modes, a))
    print(verdict(runs, a))
    sized = {r["n"]: total(r, a) for r in runs if r["n"] in TARGETS}
    if sized:
        figure(f"cost per million interrupts raised and resumed ({a.reads} reads)",
               ", ".join(f"${c:,.2f} at {n:,} nodes ({c / TARGETS[n]:.2f}x)" for n, c in sized.items()),
               ", ".join(f"<= ${TARGETS[n]:.0f} at {n:,}" for n in sized),
               all(c <= TARGETS[n] for n, c in sized.items()))


if __name__ == "__main__":
    main()
