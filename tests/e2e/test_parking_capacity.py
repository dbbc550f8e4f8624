"""Issue 22: parking past Step Functions' ceiling of open executions, over HTTP on the local stack.
The moto server's open executions are capped (a local-only control, holdpoint_local/moto/stepfunctions.py
CAP_KEY) two above what is running already: of four sessions parking at once, two get their
ParkBranch execution and two wait for capacity (the interrupt open in the table, a ParkRetry timer
set). Each is answerable and wakes exactly once; a session that needs no park goes on meanwhile; once
the cap is lifted the park still waiting starts its execution on a retry. In-process:
tests/unit/test_park_capacity.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint.aws.ddb.parking import ParkRecords
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.store import Store
from holdpoint_local.moto.server import set_execution_cap
from tests.stack import Api, execution_status, resumed_triggers, wait_execution
from tests.waiting import wait_for


def running(stack: Any) -> int:
    """Every open execution, page by page (a whole suite's parks are far more than one page)."""
    sfn = stack.client("stepfunctions")
    machines = [m for page in sfn.get_paginator("list_state_machines").paginate() for m in page["stateMachines"]]
    executions = sfn.get_paginator("list_executions")
    return sum(len(page["executions"]) for m in machines
               for page in executions.paginate(stateMachineArn=m["stateMachineArn"], statusFilter="RUNNING"))


@pytest.fixture
def capped(stack: Any) -> Iterator[int]:
    """Room for two more open executions than there are now; lifted after the test."""
    cap = running(stack) + 2
    set_execution_cap(stack.moto_endpoint, cap)
    yield cap
    set_execution_cap(stack.moto_endpoint, None)


def park_waits(sid: str, iid: str) -> int:
    """The refusals the parking's record of the raise counts."""
    state = Store().load("dev", sid)
    assert state is not None
    record = ParkRecords(Table(os.environ["TABLE_NAME"])).read("dev", sid, iid, state.interrupts[iid].generation)
    return record.waits if record is not None else 0


def test_capacity_parks_past_the_cap_wait_answerable_and_start_once_there_is_room(
        api: Api, stack: Any, worker: Any, capped: int) -> None:
    _, seen = worker
    sids = [api.start() for _ in range(4)]
    parked = {sid: api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"] for sid in sids}

    def split() -> tuple[list[str], list[str]] | None:
        started = [s for s in sids if execution_status(stack, s, parked[s]) == "RUNNING"]
        waiting = [s for s in sids if park_waits(s, parked[s]) > 0]
        return (started, waiting) if len(started) == 2 and len(waiting) == 2 else None

    started, waiting = wait_for(split, "two parks started and two waiting for capacity", timeout=60)
    assert set(started) | set(waiting) == set(sids)
    # The cap held. (Equality is not asked: another test's execution may end meanwhile in the shared AWS.)
    assert running(stack) <= capped
    # Meanwhile another session goes on to the end (it parks nothing).
    other = api.start("say hi")
    assert api.wait_status(other, "done")["messages"][-1]["content"] == "Hi!"
    # A waiting park is answered before it has any execution: the branch wakes once, on the wake alone.
    first = waiting[0]
    assert api.resume(first, parked[first], {"approved": True}).json()["noop"] is False
    assert api.wait_status(first, "done")["messages"][-1]["content"] == "Email sent."
    # Room again: the park still waiting starts its execution on its next retry.
    set_execution_cap(stack.moto_endpoint, None)
    last = waiting[1]
    wait_execution(stack, last, parked[last], "RUNNING", timeout=90)
    for sid in [*started, last]:
        assert api.resume(sid, parked[sid], {"approved": True}).json()["noop"] is False
    for sid in [*started, last]:
        api.wait_status(sid, "done")
        wait_execution(stack, sid, parked[sid], "SUCCEEDED")
    assert execution_status(stack, first, parked[first]) == "NOT_FOUND"  # the answered one never got one
    for sid in sids:
        assert len(resumed_triggers(seen, sid)) == 1
