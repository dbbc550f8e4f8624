"""Capacity model: for every AWS (and Holdpoint) quota on the path, the load a traffic level puts
on it, and which quota breaks first at 1x, 10x, 100x and 1,000x a stated baseline.

    python bench/capacity.py                       # the defaults (docs/CAPACITY.md pastes this output)
    python bench/capacity.py --timers executions   # timers as Timer Standard executions (before Scheduler)
    python bench/capacity.py --region us-east-2 --sqs-high-throughput --limit lambda_concurrency=10000
    python bench/capacity.py --from FILE.json      # requests per step re-read from `ddb_per_step.py --json`

Every assumption is a flag (`--help` lists them with their defaults). Requests per operation are
the measured ones: DynamoDB units per approval turn and per interrupt come from `ddb_per_step.py`
priced by `cost_model.py` (its `marginal` and `whole_turn`, cold containers at 10 nodes; `MEASURED`
below, which `tests/unit/test_capacity.py` checks against a fresh measurement), Lambda durations
are `cost_model.py`'s assumptions, and the stream wait's poll schedule is `services/streams.py`'s.

Loads are steady-state means (Little's law for what is held open: open = arrival rate x mean time
held); bursts are the token buckets' business and are left out. A quota's ratio is load / limit;
it breaks past 1.0. `breaks at` is the smallest multiple of the baseline at which it does.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cost_model  # noqa: E402
from _common import table  # noqa: E402  (also puts layers/core on the path)

from holdpoint.core import quotas as hp_quotas  # noqa: E402
from holdpoint.core import retry  # noqa: E402
from holdpoint.services import streams  # noqa: E402

SCALES = (1, 10, 100, 1000)
REGIONS = ("us-east-1", "us-east-2")
"""us-east-1 is the default; us-east-2 stands for Step Functions' "all other regions" column."""

Kind = Literal["adjustable", "hard", "config", "holdpoint"]
ACTIONS: dict[Kind, str] = {
    "adjustable": "raise the quota (Service Quotas); past what AWS grants, shard across accounts or regions",
    "hard": "shard (split the key or the resource across accounts/regions), or refuse the excess",
    "config": "raise it by configuration",
    "holdpoint": "refuse (429 quota_exceeded, by design) or raise the template parameter",
}

SOURCES = {
    "sfn": ("AWS Step Functions Developer Guide, \"Step Functions service quotas\"",
            "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"),
    "lambda": ("AWS Lambda Developer Guide, \"Lambda quotas\" and \"Lambda scaling behavior\"",
               "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"),
    "sqs": ("Amazon SQS Developer Guide, \"Amazon SQS message quotas\" (FIFO throughput, high throughput mode)",
            "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"),
    "ddb": ("Amazon DynamoDB Developer Guide, \"Quotas in Amazon DynamoDB\" (throughput, transactions) "
            "and \"read and write operations\"",
            "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"),
    "ddb_part": ("AWS Knowledge Center, \"My on-demand DynamoDB table has throttling\" (per-partition maximum)",
                 "https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb"),
    "eb": ("Amazon EventBridge User Guide, \"Amazon EventBridge quotas\" (PutEvents)",
           "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"),
    "sched": ("EventBridge Scheduler User Guide, \"Quotas for Amazon EventBridge Scheduler\"",
              "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"),
    "apigw": ("Amazon API Gateway Developer Guide, \"Amazon API Gateway quotas\"",
              "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"),
    "hp": ("Holdpoint template.yaml, parameters Quota* (docs/SECURITY.md, \"Quotas\")", "template.yaml"),
}


@dataclass(frozen=True)
class Quota:
    key: str
    name: str
    scope: str
    limits: dict[str, float]  # by region; "*" for every region
    kind: Kind
    source: str
    action: str = ""  # what a deployment does past it, when not the kind's default

    def limit(self, region: str) -> float:
        return self.limits.get(region, self.limits.get("*", math.nan))

    def what_then(self) -> str:
        return self.action or ACTIONS[self.kind]


def _both(value: float) -> dict[str, float]:
    return {"*": value}


QUOTAS = (
    Quota("sfn_open_executions", "SFN open executions (Standard)", "account-region",
          _both(1_000_000), "adjustable", "sfn"),
    Quota("sfn_start_execution", "SFN StartExecution /s (refill)", "account-region",
          {"us-east-1": 300, "us-east-2": 150}, "adjustable", "sfn"),
    Quota("sfn_send_task_success", "SFN SendTaskSuccess /s (refill)", "account-region",
          {"us-east-1": 500, "us-east-2": 300}, "adjustable", "sfn"),
    Quota("sfn_state_transitions", "SFN state transitions /s", "account-region",
          {"us-east-1": 5_000, "us-east-2": 800}, "adjustable", "sfn"),
    Quota("lambda_concurrency", "Lambda concurrency, all functions", "account-region",
          _both(1_000), "adjustable", "lambda"),
    Quota("sqs_send", "SQS FIFO SendMessage /s", "queue",
          _both(300), "config", "sqs",
          "enable high-throughput mode (FifoThroughputLimit=perMessageGroupId, DeduplicationScope=messageGroup); "
          "past that, shard the work queue by session hash or shard across regions"),
    Quota("sqs_receive", "SQS FIFO Receive+DeleteMessage /s", "queue",
          _both(300), "config", "sqs",
          "enable high-throughput mode; past that, shard the work queue by session hash or across regions"),
    Quota("sqs_group", "SQS FIFO per message group /s", "message group",
          _both(300), "hard", "sqs", "refuse: a session's work is one ordered group and cannot be split"),
    Quota("ddb_table_wru", "DDB table WRU/s (on-demand)", "table",
          _both(40_000), "adjustable", "ddb"),
    Quota("ddb_table_rru", "DDB table RRU/s (on-demand)", "table",
          _both(40_000), "adjustable", "ddb"),
    Quota("ddb_hot_session_wcu", "DDB hot session partition WCU/s", "partition",
          _both(1_000), "hard", "ddb_part", "refuse: one session's partition cannot be split"),
    Quota("ddb_hot_session_rcu", "DDB hot session partition RCU/s", "partition",
          _both(3_000), "hard", "ddb_part", "refuse: lower the waits per session (QuotaStreamWaitsPerTenant)"),
    Quota("ddb_tenant_open_item", "DDB item QUOTA/OPEN, top tenant WCU/s", "item",
          _both(1_000), "hard", "ddb_part", "shard the counter (N counter items per tenant), or refuse"),
    Quota("ddb_tenant_wait_item", "DDB item QUOTA/W, top tenant WCU/s", "item",
          _both(1_000), "hard", "ddb_part", "shard the lease holder, or refuse (QuotaStreamWaitsPerTenant)"),
    Quota("ddb_tenant_gsi", "DDB tenant GSI partitions, top tenant WCU/s",
          "GSI partition", _both(1_000), "hard", "ddb_part", "shard the index key by a suffix, or refuse"),
    Quota("ddb_transaction_items", "DDB items per transaction, largest step", "request",
          _both(100), "hard", "ddb", "refuse (TooManyChanges: a step changes at most 100 items)"),
    Quota("eb_put_events", "EventBridge PutEvents /s", "account-region",
          {"us-east-1": 10_000, "us-east-2": 2_400}, "adjustable", "eb"),
    Quota("sched_create", "Scheduler CreateSchedule /s", "account-region",
          _both(5_000), "adjustable", "sched"),
    Quota("sched_invocations", "Scheduler invocations /s", "account-region",
          _both(1_000), "adjustable", "sched"),
    Quota("sched_schedules", "Scheduler schedules", "account-region",
          _both(10_000_000), "adjustable", "sched"),
    Quota("apigw_rps", "API Gateway requests /s", "account-region",
          _both(10_000), "adjustable", "apigw"),
    Quota("hp_open_per_tenant", "QuotaOpenInterruptsPerTenant (top)", "tenant",
          _both(hp_quotas.Quotas.open_interrupts_per_tenant), "holdpoint", "hp"),
    Quota("hp_sessions_per_second", "QuotaSessionsPerSecond (top)", "tenant",
          _both(hp_quotas.Quotas.sessions_per_second), "holdpoint", "hp"),
    Quota("hp_waits_per_tenant", "QuotaStreamWaitsPerTenant (top)", "tenant",
          _both(hp_quotas.Quotas.stream_waits_per_tenant), "holdpoint", "hp"),
    Quota("hp_waits_per_caller", "QuotaStreamWaitsPerCaller", "caller",
          _both(hp_quotas.Quotas.stream_waits_per_caller), "holdpoint", "hp"),
    Quota("hp_waits_total", "QuotaStreamWaitsTotal", "deployment",
          _both(hp_quotas.Quotas.stream_waits_total), "holdpoint", "hp"),
)
BY_KEY = {q.key: q for q in QUOTAS}
HIGH_THROUGHPUT_FIFO = {"us-east-1": 70_000, "us-east-2": 19_000}
"""SendMessage/ReceiveMessage/DeleteMessage per s per queue in high-throughput mode (non-batched)."""


@dataclass(frozen=True)
class Measured:
    """DynamoDB units per operation, from `ddb_per_step.py` and `cost_model.py` (cold containers,
    10 nodes): the marginal interrupt and the whole approval turn (which holds one interrupt)."""

    interrupt_wru: float = 34.0   # cost_model.marginal: raise, start_park, park, resume, wake (+GSI, +shares)
    interrupt_rru: float = 8.5
    interrupt_gsi_wru: float = 6.0  # of interrupt_wru, the index writes (Inbox, History, Sessions)
    turn_wru: float = 98.0        # cost_model.whole_turn: submit ... resume ... turn end (+GSI, +shares)
    turn_rru: float = 23.0
    turn_gsi_wru: float = 8.0
    step_wru: float = 7.69        # ddb_per_step.mean_step: mean engine step
    step_rru: float = 1.54
    commit_items: float = 9.0     # the most items one measured step writes (the wake's commit)


MEASURED = Measured()
PHASES = ("interrupt_turn", "park", "resume_api", "wake")


def measured_from(run: dict[str, Any]) -> Measured:
    """The same figures re-read from one `ddb_per_step.py` run (one tree size, one reads mode)."""
    from ddb_per_step import mean_step  # noqa: PLC0415

    a = cost_model.parser().parse_args([])
    marginal, whole = cost_model.marginal(run, a), cost_model.whole_turn(run, a)
    raise_step = cost_model._find(run["interrupt_turn"], "deliver tool.execute")
    marginal_steps = [cost_model._find(run["interrupt_turn"], "start_park")] + [t for _, t in run["park"]] + \
        [t for _, t in run["resume_api"]] + [t for lab, t in run["wake"] if lab in cost_model.WAKE_STEPS]
    step = mean_step(run)
    return Measured(
        interrupt_wru=marginal["dynamodb writes (WRU)"][0], interrupt_rru=marginal["dynamodb reads (RRU)"][0],
        interrupt_gsi_wru=raise_step["gsi_wru"] + sum(t["gsi_wru"] for t in marginal_steps),
        turn_wru=whole["dynamodb writes (WRU)"][0], turn_rru=whole["dynamodb reads (RRU)"][0],
        turn_gsi_wru=sum(t["gsi_wru"] for phase in PHASES for _, t in run[phase]),
        step_wru=round(step["wru"], 2), step_rru=round(step["rru"], 2),
        commit_items=max(t["ddb_items_written"] for phase in ("plain_turn", *PHASES) for _, t in run[phase]))


def polls_per_wait(wait_secs: float) -> int:
    """Queries one idle stream wait makes (services/streams.wait_events' schedule): one at once,
    then after 50 ms growing 1.5x per round to at most 250 ms apart, the last at the cap."""
    polls, waited, pause = 1, 0.0, streams.FIRST_POLL_SECS
    while waited < wait_secs - 1e-9:
        waited += min(pause, wait_secs - waited)
        polls += 1
        pause = min(pause * streams.GROWTH, streams.MAX_POLL_SECS)
    return polls


@dataclass
class Traffic:
    """The traffic at one multiple of the baseline, whole deployment and top tenant."""

    scale: float
    sessions: float          # sessions started per second
    interrupts: float        # interrupts raised per second
    tenants: float
    watchers: float          # clients following a session (each holds one stream wait at a time)
    top_sessions: float
    top_interrupts: float
    top_watchers: float
    admitted: float = 0.0    # waits the per-tenant quota lets in, whole deployment
    top_admitted: float = 0.0
    timers: float = 0.0      # timers scheduled per second
    timer_open: float = 0.0  # timers pending at once (Little's law)
    extra: dict[str, float] = field(default_factory=dict)


def traffic(a: argparse.Namespace, scale: float) -> Traffic:
    """Scale the baseline: total sessions and watchers grow by `scale`; the number of tenants by
    `scale ** tenant_growth`, so the top tenant's share of the traffic grows by the rest."""
    tenants = a.tenants * scale ** a.tenant_growth
    top_factor = a.top_tenant_share * scale ** (1 - a.tenant_growth)
    sessions, watchers = a.sessions_per_sec * scale, a.watchers * scale
    t = Traffic(scale=scale, sessions=sessions, interrupts=sessions * a.interrupts_per_session, tenants=tenants,
                watchers=watchers, top_sessions=a.sessions_per_sec * top_factor,
                top_interrupts=a.sessions_per_sec * a.interrupts_per_session * top_factor,
                top_watchers=min(watchers, a.watchers * top_factor))
    cap = a.waits_per_tenant_limit
    t.top_admitted = min(t.top_watchers, cap)
    t.admitted = min(t.top_admitted + min(watchers - t.top_watchers, max(0.0, tenants - 1) * cap),
                     a.waits_total_limit)
    t.top_admitted = min(t.top_admitted, t.admitted)
    rates = ((t.sessions * a.retry_timers_per_session, a.retry_secs),
             (t.sessions * a.deadline_timers_per_session, a.deadline_secs),
             (t.interrupts * a.reminders_per_interrupt, a.reminder_secs),
             (t.interrupts * a.escalations_per_interrupt, a.escalation_secs),
             (t.interrupts * a.notify_retries_per_interrupt, a.notify_retry_secs))
    t.timers = sum(r for r, _ in rates)
    t.timer_open = sum(r * secs for r, secs in rates)
    return t


def step_functions(a: argparse.Namespace, t: Traffic) -> dict[str, float]:
    """ParkBranch: one execution per interrupt, open until its resume (SendTaskSuccess) or expiry,
    one billed transition (Park; two on expiry). Timer executions (`--timers executions`, the code
    before timers moved to Scheduler): one StartExecution each, open for the timer's delay, two
    transitions (Wait, Fire)."""
    as_executions = a.timers == "executions"
    resumed = t.interrupts * (1 - a.expired_share)
    return {
        "sfn_open_executions": t.interrupts * a.mean_wait_secs + (t.timer_open if as_executions else 0),
        "sfn_start_execution": t.interrupts + (t.timers if as_executions else 0),
        "sfn_send_task_success": resumed,
        "sfn_state_transitions": resumed + 2 * (t.interrupts - resumed) + (2 * t.timers if as_executions else 0),
        "sched_create": 0 if as_executions else t.timers,
        "sched_invocations": 0 if as_executions else t.timers,
        "sched_schedules": 0 if as_executions else t.timer_open,
    }


def api_requests(a: argparse.Namespace, t: Traffic) -> tuple[float, float]:
    """HTTP requests per second: the sessions' (submit, resumes, the rest), and the stream waits'
    (each wait is one request; a refused one is answered at once and retried after the same time)."""
    sessions = t.sessions * (1 + a.interrupts_per_session + a.api_requests_per_session)
    return sessions, t.watchers / a.wait_secs


def lambdas(a: argparse.Namespace, t: Traffic) -> dict[str, float]:
    """Concurrency per function (rate x duration): the engine waits on the LLM in-process; each
    admitted stream wait holds an API function instance for its whole wait."""
    k = a.interrupts_per_session
    engine_secs = ((1 + k) * (a.turn_engine_ms + a.llm_call_secs * 1000) + k * a.park_ms) / 1000
    sessions_rps, wait_rps = api_requests(a, t)
    auth = (sessions_rps + wait_rps) * (1 - a.authorizer_cache_hit)
    return {
        "engine": t.sessions * engine_secs + t.timers * a.park_ms / 1000,  # a fired timer: one short run
        "api": t.sessions * (1 + a.api_requests_per_session) * a.resume_ms / 1000 + t.admitted,
        "resume": t.interrupts * a.resume_ms / 1000,
        "authorizer": auth * a.authorizer_ms / 1000,
        "notifier": t.interrupts * a.notifier_invocations * a.notifier_ms / 1000,
    }


def queue(a: argparse.Namespace, t: Traffic) -> dict[str, float]:
    """Work-queue messages: the submit's kick, ParkBranch's park, the resume's wake (2 per
    interrupt), one per timer that fires. Receives and deletes come in batches of what is there."""
    sends = t.sessions * (1 + a.kicks_per_session) + 2 * t.interrupts + t.timers
    return {"sqs_send": sends, "sqs_receive": sends / a.messages_per_receive,
            "sqs_group": a.hot_session_messages_per_sec}


def wait_units(a: argparse.Namespace, live_leases: float) -> tuple[float, float, float]:
    """DynamoDB units of one stream wait: (WRU, RRU, of the WRU those on the tenant's `W` item).
    Its lease (aws/leases.py): two consistent GetItems, a transaction rewriting the caller's and the
    tenant's holder (2 WRU per KB each), two UpdateItems giving it back, a delete of the caller's
    holder; the session check (one GetItem) and the polls (one consistent Query each)."""
    w_kb = math.ceil((a.lease_item_base_bytes + live_leases * a.lease_bytes) / 1024)
    w_wru = 2 * w_kb + w_kb
    wru = 2 + 1 + 1 + w_wru
    rru = 1 + math.ceil((a.lease_item_base_bytes + live_leases * a.lease_bytes) / 4096) + 1 \
        + polls_per_wait(a.wait_secs) * a.poll_rru
    return wru, rru, w_wru


def dynamodb(a: argparse.Namespace, t: Traffic, m: Measured) -> dict[str, float]:
    """Table, hot-partition and hot-item loads. A session is one partition; each tenant has one
    quota partition whose `OPEN` item every raise and every applied wake moves (transactional ADD,
    2 WRU) and whose `W` item every stream wait rewrites; the GSIs are keyed by tenant."""
    k = a.interrupts_per_session
    per_session_wru = m.turn_wru - m.interrupt_wru + k * m.interrupt_wru
    per_session_rru = m.turn_rru - m.interrupt_rru + k * m.interrupt_rru
    wait_wru, wait_rru, w_item_wru = wait_units(a, t.top_admitted)
    waits = t.admitted / a.wait_secs
    _, wait_rps = api_requests(a, t)
    hot_watchers = min(a.hot_session_watchers, t.top_admitted)
    per_session_gsi = m.turn_gsi_wru - m.interrupt_gsi_wru + k * m.interrupt_gsi_wru
    return {
        "ddb_table_wru": t.sessions * per_session_wru + waits * wait_wru,
        "ddb_table_rru": t.sessions * per_session_rru + waits * wait_rru + 0.5 * wait_rps,
        "ddb_hot_session_wcu": a.hot_session_steps_per_sec * m.step_wru,
        "ddb_hot_session_rcu": a.hot_session_steps_per_sec * m.step_rru
        + hot_watchers * polls_per_wait(a.wait_secs) / a.wait_secs * a.poll_rru,
        "ddb_tenant_open_item": t.top_interrupts * 2 * 2,
        "ddb_tenant_wait_item": t.top_admitted / a.wait_secs * w_item_wru,
        "ddb_tenant_gsi": t.top_sessions * per_session_gsi,
        "ddb_transaction_items": m.commit_items,
    }


def loads(a: argparse.Namespace, scale: float, m: Measured = MEASURED) -> dict[str, float]:
    """Every quota's load at `scale` times the baseline."""
    t = traffic(a, scale)
    sessions_rps, wait_rps = api_requests(a, t)
    out = {**step_functions(a, t), **queue(a, t), **dynamodb(a, t, m),
           "lambda_concurrency": sum(lambdas(a, t).values()),
           "eb_put_events": t.interrupts * a.notify_events,
           "apigw_rps": sessions_rps + wait_rps,
           "hp_open_per_tenant": t.top_interrupts * a.mean_wait_secs,
           "hp_sessions_per_second": t.top_sessions,
           "hp_waits_per_tenant": t.top_watchers,
           "hp_waits_per_caller": a.waits_per_caller,
           "hp_waits_total": t.watchers}
    return out


def limits(a: argparse.Namespace) -> dict[str, float]:
    """Each quota's limit in `--region`, high-throughput FIFO if asked, then `--limit` overrides."""
    out = {q.key: q.limit(a.region) for q in QUOTAS}
    if a.sqs_high_throughput:
        out["sqs_send"] = out["sqs_receive"] = HIGH_THROUGHPUT_FIFO[a.region]
    out["hp_waits_per_tenant"] = a.waits_per_tenant_limit
    out["hp_waits_total"] = a.waits_total_limit
    for item in a.limit:
        key, _, value = item.partition("=")
        if key not in out:
            raise SystemExit(f"--limit {item}: no quota {key!r} (one of {', '.join(out)})")
        out[key] = float(value)
    return out


def breaks_at(ratio: Callable[[float], float], lo: float = 1e-3, hi: float = 1e7) -> float:
    """The smallest multiple of the baseline at which `ratio` passes 1.0 (ratios only grow with
    the scale), or inf if it never does below `hi`."""
    if ratio(hi) <= 1.0:
        return math.inf
    if ratio(lo) > 1.0:
        return lo
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ratio(mid) <= 1.0 else (lo, mid)
    return hi


@dataclass
class Row:
    quota: Quota
    limit: float
    loads: dict[float, float]
    breaks: float

    def ratio(self, scale: float) -> float:
        return self.loads[scale] / self.limit if self.limit else math.inf


def model(a: argparse.Namespace, m: Measured = MEASURED, scales: Iterable[float] = SCALES) -> list[Row]:
    """One row per quota: its limit, its load at each scale and the multiple at which it breaks."""
    lim = limits(a)
    scales = tuple(scales)
    at = {s: loads(a, s, m) for s in scales}
    rows = []
    for q in QUOTAS:
        if a.timers == "executions" and q.key.startswith("sched_"):
            continue  # no schedules in this mode: the rows would read 0 / limit
        rows.append(Row(q, lim[q.key], {s: at[s][q.key] for s in scales},
                        breaks_at(lambda s, key=q.key: loads(a, s, m)[key] / lim[key])))
    return rows


def first_ceiling(rows: list[Row], scale: float, kinds: tuple[Kind, ...] | None = None) -> Row | None:
    """Of the quotas past 1.0 at `scale`, the one the traffic met first on its way there."""
    over = [r for r in rows if r.ratio(scale) > 1.0 and (kinds is None or r.quota.kind in kinds)]
    return min(over, key=lambda r: (r.breaks, -r.ratio(scale))) if over else None


def _n(x: float) -> str:
    if math.isinf(x):
        return "never"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:,.2f}" if x >= 1 else f"{x:.3g}"


def render(a: argparse.Namespace, rows: list[Row], m: Measured) -> str:
    scales = tuple(rows[0].loads)
    src = list(SOURCES)
    body = [[r.quota.name, r.quota.scope, _n(r.limit)]
            + [f"{_n(r.loads[s])} ({r.ratio(s):.2g})" for s in scales]
            + [("x" + _n(r.breaks)) if not math.isinf(r.breaks) else "never", r.quota.kind,
               f"[{src.index(r.quota.source) + 1}]"] for r in rows]
    out = [assumptions(a, m),
           table(["quota", "scope", f"limit ({a.region})"]
                 + [f"{s:g}x load (ratio)" for s in scales] + ["breaks at", "kind", "source"], body,
                 "Load (load / limit) at each multiple of the baseline; past 1.0 the quota breaks"),
           lambda_table(a, scales), "", "First ceiling at each scale:"]
    for s in scales:
        out.append(verdict(rows, s))
    out += ["", "Sources:"] + [f"[{i + 1}] {title}: {url}" for i, (title, url) in enumerate(SOURCES.values())]
    return "\n".join(out)


def verdict(rows: list[Row], scale: float) -> str:
    """One scale's line: the first ceiling, what a deployment does then, and what else is over."""
    first = first_ceiling(rows, scale)
    if first is None:
        near = max(rows, key=lambda r: r.ratio(scale))
        return (f"- {scale:g}x: none past 1.0; the nearest is {near.quota.name} at {near.ratio(scale):.2f} "
                f"(breaks at x{_n(near.breaks)})")
    line = (f"- {scale:g}x: {first.quota.name}, {_n(first.loads[scale])} against {_n(first.limit)} "
            f"({first.ratio(scale):.2f}; breaks at x{_n(first.breaks)}) -> {first.quota.what_then()}")
    if first.quota.kind == "holdpoint":
        aws = first_ceiling(rows, scale, ("adjustable", "hard", "config"))
        line += (f". First AWS quota: {aws.quota.name} ({aws.ratio(scale):.2f}; breaks at x{_n(aws.breaks)}) -> "
                 f"{aws.quota.what_then()}" if aws else ". No AWS quota is past 1.0")
    others = [r for r in rows if r is not first and r.ratio(scale) > 1.0]
    if others:
        line += ". Also past 1.0: " + ", ".join(f"{r.quota.key} ({r.ratio(scale):.2f})" for r in
                                               sorted(others, key=lambda r: r.breaks))
    return line


def lambda_table(a: argparse.Namespace, scales: tuple[float, ...]) -> str:
    per = {s: lambdas(a, traffic(a, s)) for s in scales}
    names = list(per[scales[0]])
    rows = [[n] + [_n(per[s][n]) for s in scales] for n in names]
    rows.append(["all functions"] + [_n(sum(per[s].values())) for s in scales])
    return table(["function"] + [f"{s:g}x" for s in scales], rows,
                 "Lambda concurrency by function (no reserved concurrency in template.yaml: each draws on the "
                 "account's pool)")


def assumptions(a: argparse.Namespace, m: Measured) -> str:
    flags = {k: v for k, v in vars(a).items() if k not in ("src", "reads", "limit", "json")}
    text = ", ".join(f"{k.replace('_', '-')}={v:g}" if isinstance(v, float) else f"{k.replace('_', '-')}={v}"
                     for k, v in flags.items())
    t = traffic(a, 1)
    return (f"Baseline (1x): {a.tenants:g} tenants, {a.sessions_per_sec:g} sessions/s, "
            f"{a.interrupts_per_session:g} interrupt(s) per session, mean wait {a.mean_wait_secs:g} s, "
            f"{a.watchers:g} watchers; timers as {a.timers} "
            f"({'the code today' if a.timers == 'scheduler' else 'as before the move to Scheduler'}); "
            f"region {a.region}; SQS FIFO high throughput {'on' if a.sqs_high_throughput else 'off (template.yaml)'}.\n"
            f"At 1x: {t.interrupts:g} interrupts/s, {t.interrupts * a.mean_wait_secs:,.0f} parked at once, "
            f"{t.timers:g} timers/s with {t.timer_open:,.0f} pending, {t.admitted:,.0f} of {t.watchers:,.0f} "
            f"watchers admitted; a stream wait polls {polls_per_wait(a.wait_secs)} times per {a.wait_secs:g} s.\n"
            f"Measured units (ddb_per_step/cost_model): {asdict(m)}\nAll flags: {text}")


def parser() -> argparse.ArgumentParser:
    """Every assumption, a flag; durations default to cost_model.py's."""
    cm = cost_model.parser().parse_args([])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    f = ap.add_argument
    f("--tenants", type=float, default=10, help="tenants at 1x")
    f("--sessions-per-sec", type=float, default=5, help="sessions started per second at 1x, all tenants")
    f("--interrupts-per-session", type=float, default=1, help="interrupts raised per session")
    f("--mean-wait-secs", type=float, default=3600, help="mean time an interrupt stays parked")
    f("--watchers", type=float, default=500, help="clients following a session at once at 1x (each holds one wait)")
    f("--tenant-growth", type=float, default=0.5,
      help="tenants grow by scale**this (0: the same tenants grow; 1: only new tenants of the same size)")
    f("--top-tenant-share", type=float, default=0.2, help="the largest tenant's share of the traffic at 1x")
    f("--timers", choices=("executions", "scheduler"), default="scheduler",
      help="timers as EventBridge Scheduler one-time schedules (the code today) or Timer Standard executions")
    f("--region", choices=REGIONS, default="us-east-1", help="whose quota figures (us-east-2: SFN 'all other')")
    f("--sqs-high-throughput", action="store_true", help="the work queue in FIFO high-throughput mode")
    f("--limit", action="append", default=[], metavar="KEY=VALUE", help="override a quota's limit (keys in --help)")
    f("--retry-timers-per-session", type=float, default=0.05, help="backoff timers per session (failed deliveries)")
    f("--retry-secs", type=float, default=retry.DEFAULTS["decision"].backoff(1), help="mean backoff delay")
    f("--deadline-timers-per-session", type=float, default=0.0,
      help="call deadline timers per session (one per call a worker answers 202; none when it answers at once)")
    f("--deadline-secs", type=float, default=retry.DEFAULTS["tool"].attempt_timeout_secs, help="call deadline")
    f("--reminders-per-interrupt", type=float, default=1, help="reminders an interrupt declares (A5)")
    f("--reminder-secs", type=float, default=1800, help="reminder delay (its timer runs it out even if resolved)")
    f("--escalations-per-interrupt", type=float, default=0, help="escalations an interrupt declares (A5)")
    f("--escalation-secs", type=float, default=3600)
    f("--notify-retries-per-interrupt", type=float, default=0, help="webhook retry timers per interrupt")
    f("--notify-retry-secs", type=float, default=retry.DEFAULTS["webhook"].backoff(1))
    f("--expired-share", type=float, default=0.0, help="share of interrupts that expire instead of being resumed")
    f("--api-requests-per-session", type=float, default=0,
      help="HTTP requests per session beyond the submit and the resumes (views, listings)")
    f("--kicks-per-session", type=float, default=0, help="work messages per session beyond the submit's kick")
    f("--messages-per-receive", type=float, default=1, help="messages per ReceiveMessage/DeleteMessage batch")
    f("--hot-session-messages-per-sec", type=float, default=2, help="work messages/s of the busiest session")
    f("--hot-session-steps-per-sec", type=float, default=4, help="engine steps/s of the busiest session")
    f("--hot-session-watchers", type=float, default=hp_quotas.Quotas.stream_waits_per_tenant,
      help="waits on the busiest session (default: all the tenant quota admits)")
    f("--waits-per-caller", type=float, default=1, help="stream waits one caller holds")
    f("--waits-per-tenant-limit", type=float, default=hp_quotas.Quotas.stream_waits_per_tenant,
      help="QuotaStreamWaitsPerTenant (admits waits; also the row's limit)")
    f("--waits-total-limit", type=float, default=hp_quotas.Quotas.stream_waits_total,
      help="QuotaStreamWaitsTotal (admits waits across tenants; also the row's limit)")
    f("--wait-secs", type=float, default=streams.MAX_WAIT_SECS, help="how long an idle stream wait lasts")
    f("--poll-rru", type=float, default=1.0,
      help="RRU of one poll (a strongly consistent Query of < 4 KB; bench/README.md (f) counts 0.5)")
    f("--lease-bytes", type=float, default=32, help="bytes one lease adds to the tenant's W item")
    f("--lease-item-base-bytes", type=float, default=120, help="the W item's bytes without leases")
    f("--llm-call-secs", type=float, default=2.0, help="one LLM call, which the engine waits on in-process")
    for name in ("turn_engine_ms", "park_ms", "resume_ms", "authorizer_ms", "notifier_ms", "authorizer_cache_hit",
                 "notify_events", "notifier_invocations"):
        f("--" + name.replace("_", "-"), type=float, default=float(getattr(cm, name)), help="cost_model.py's")
    f("--from", dest="src", help="re-read the measured units from `ddb_per_step.py --json FILE`")
    f("--reads", choices=tuple(cost_model.READS_KEYS), default="cold-container", help="which runs --from reads")
    f("--nodes", type=int, default=10, help="which tree size --from reads")
    return ap


def main(argv: list[str] | None = None) -> str:
    a = parser().parse_args(argv)
    m = MEASURED
    if a.src:
        runs = json.loads(Path(a.src).read_text())[cost_model.READS_KEYS[a.reads]]
        m = measured_from(next(r for r in runs if r["n"] == a.nodes))
    text = render(a, model(a, m), m)
    print(text)
    return text


if __name__ == "__main__":
    main()
