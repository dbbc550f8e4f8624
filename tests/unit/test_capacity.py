"""The capacity model (bench/capacity.py, docs/CAPACITY.md): its arithmetic on a small case, the
first ceiling it names, and that its measured units and poll count are the code's own."""

from __future__ import annotations

import importlib
import math
import sys
from types import ModuleType
from typing import Any

import pytest

from holdpoint.core import engine
from holdpoint.services import streams
from tests.unit.test_bench_reads import BENCH, bench_module

QUIET = ["--retry-timers-per-session", "0", "--reminders-per-interrupt", "0", "--watchers", "0"]
"""No timers and no watchers: only the sessions and their interrupts load the quotas."""


@pytest.fixture(scope="module")
def capacity() -> ModuleType:
    """Imported by name (its dataclasses need the module registered), from bench/ like the others."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("capacity")


def args(capacity: ModuleType, *argv: str) -> Any:
    return capacity.parser().parse_args(list(argv))


def test_capacity_open_executions_follow_littles_law(capacity: ModuleType) -> None:
    """Open = arrival rate x mean time held: 2 interrupts/s parked 100 s, plus one 50 s reminder each
    as a schedule (the code today) or, with --timers executions, as a Timer execution instead."""
    small = ["--sessions-per-sec", "2", "--mean-wait-secs", "100", "--retry-timers-per-session", "0",
             "--reminders-per-interrupt", "1", "--reminder-secs", "50", "--watchers", "0"]
    as_executions = capacity.loads(args(capacity, *small, "--timers", "executions"), 1)
    assert as_executions["sfn_open_executions"] == pytest.approx(2 * 100 + 2 * 50)
    assert as_executions["sfn_start_execution"] == pytest.approx(2 + 2)
    assert as_executions["sfn_state_transitions"] == pytest.approx(2 * 1 + 2 * 2)  # Park; Wait + Fire
    assert as_executions["sched_create"] == 0
    as_schedules = capacity.loads(args(capacity, *small), 1)
    assert as_schedules["sfn_open_executions"] == pytest.approx(200)
    assert as_schedules["sfn_start_execution"] == pytest.approx(2)
    assert as_schedules["sched_schedules"] == pytest.approx(100)
    assert as_schedules["sched_create"] == as_schedules["sched_invocations"] == pytest.approx(2)
    at_ten = capacity.loads(args(capacity, *small, "--timers", "executions"), 10)
    assert at_ten["sfn_open_executions"] == pytest.approx(10 * 300)


def test_capacity_requests_per_session_are_the_measured_ones(capacity: ModuleType) -> None:
    """Per session of one interrupt: the submit's kick, the park and the wake on the queue; the
    submit and the resume through API Gateway; the measured WRU of the whole approval turn."""
    a = args(capacity, "--sessions-per-sec", "3", *QUIET)
    got = capacity.loads(a, 1)
    assert got["sqs_send"] == pytest.approx(3 * 3)
    assert got["apigw_rps"] == pytest.approx(3 * 2)
    assert got["sfn_send_task_success"] == pytest.approx(3)
    assert got["eb_put_events"] == pytest.approx(3 * 2)
    assert got["ddb_table_wru"] == pytest.approx(3 * capacity.MEASURED.turn_wru)
    two = capacity.loads(args(capacity, "--sessions-per-sec", "3", "--interrupts-per-session", "2", *QUIET), 1)
    assert two["ddb_table_wru"] == pytest.approx(3 * (capacity.MEASURED.turn_wru + capacity.MEASURED.interrupt_wru))
    assert two["sqs_send"] == pytest.approx(3 * (1 + 2 * 2))


def test_capacity_first_ceiling_is_the_quota_met_first(capacity: ModuleType) -> None:
    """StartExecution at 2/s against a limit of 10 breaks at 5x: nothing is past 1.0 at 1x, and at
    10x it is the first ceiling, SendMessage (6/s against 40, breaking at 6.67x) being over too. A
    limit the baseline already exceeds (the largest commit's 8 items against 7) comes first at
    every scale, though its ratio (1.14) is below StartExecution's at 10x (2.0)."""
    small = ["--sessions-per-sec", "2", "--tenants", "1", "--top-tenant-share", "1", *QUIET,
             "--limit", "sfn_start_execution=10", "--limit", "sqs_send=40", "--limit", "hp_open_per_tenant=1e6"]
    rows = capacity.model(args(capacity, *small))
    by_key = {r.quota.key: r for r in rows}
    assert by_key["sfn_start_execution"].breaks == pytest.approx(5, rel=1e-6)
    assert by_key["sqs_send"].breaks == pytest.approx(40 / 6, rel=1e-6)
    assert capacity.first_ceiling(rows, 1) is None
    first = capacity.first_ceiling(rows, 10)
    assert first is not None and first.quota.key == "sfn_start_execution"
    assert "10x: SFN StartExecution" in capacity.verdict(rows, 10)
    assert math.isinf(by_key["sqs_group"].breaks)
    rows = capacity.model(args(capacity, *small, "--limit", "ddb_transaction_items=7"))
    for scale in (1, 10):
        first = capacity.first_ceiling(rows, scale)
        assert first is not None and first.quota.key == "ddb_transaction_items", scale


def test_capacity_first_ceiling_names_the_aws_quota_behind_a_holdpoint_one(capacity: ModuleType) -> None:
    """A Holdpoint quota refuses by design; the verdict then also names the first AWS quota."""
    a = args(capacity, "--sessions-per-sec", "2", "--tenants", "1", "--top-tenant-share", "1", *QUIET,
             "--limit", "hp_sessions_per_second=1", "--limit", "sfn_start_execution=10")
    rows = capacity.model(a)
    first = capacity.first_ceiling(rows, 10)
    assert first is not None and first.quota.key == "hp_sessions_per_second"
    line = capacity.verdict(rows, 10)
    assert "First AWS quota: SFN StartExecution" in line, line


def test_capacity_polls_per_wait_are_the_stream_waits_own(capacity: ModuleType) -> None:
    """The poll count comes from services/streams.wait_events' schedule: count its Queries on an idle wait."""
    now = [0.0]
    polls = []

    class Idle:
        def events(self, *_: Any) -> list[Any]:
            polls.append(now[0])
            return []

    def sleep(secs: float) -> None:
        now[0] += secs

    streams.wait_events(Idle(), "t", "s", 0, 10, streams.MAX_WAIT_SECS,  # type: ignore[arg-type]
                        clock=lambda: now[0], sleep=sleep)
    assert capacity.polls_per_wait(streams.MAX_WAIT_SECS) == len(polls)


def test_capacity_measured_units_match_a_fresh_measurement(capacity: ModuleType) -> None:
    """MEASURED (the defaults) is what ddb_per_step.py measures now at 10 nodes on cold containers,
    priced by cost_model.py: a change to the store's writes or reads shows here first."""
    ddb_per_step = bench_module("ddb_per_step")
    original = engine.next_work
    try:
        run = ddb_per_step.measure([10], "seeded", reads="cold-container")[0]
    finally:
        engine.next_work = original
    assert capacity.measured_from(run) == capacity.MEASURED


def test_capacity_prints_every_scale_and_source(capacity: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    text = capacity.main([])
    assert capsys.readouterr().out.strip() == text.strip()
    for scale in capacity.SCALES:
        assert f"- {scale}x: " in text
    for title, url in capacity.SOURCES.values():
        assert f"{title}: {url}" in text
