"""The `ports.ParkRecords` contract, held by both: the DynamoDB records on moto (aws/ddb/parking.py)
and their in-memory twin (memory/parking.py) the rule and service tests run on. A park record is
the parking's own, one per raise: each field written once, by a conditional write, so a retried or
duplicated write (a crash, a redelivered message) changes nothing; nothing of it reaches a load."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint.ports import ParkRecord
from holdpoint_local.memory.parking import MemoryParkRecords

RECORDS = ["memory", "dynamodb"]


@pytest.fixture(params=RECORDS)
def records(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryParkRecords()
        return
    request.getfixturevalue("aws")
    from holdpoint.aws.ddb.parking import ParkRecords
    from holdpoint.aws.ddb.table import Table

    yield ParkRecords(Table(os.environ["TABLE_NAME"]))


def test_r13_a_raise_has_no_record_until_its_park_writes_one(records: Any) -> None:
    assert records.read("t1", "s1", "int_1", 0) is None


def test_r13_each_field_is_written_once_and_a_repeat_writes_nothing(records: Any) -> None:
    records.started("t1", "s1", "int_1", 0, "arn-1")
    records.started("t1", "s1", "int_1", 0, "arn-2")  # a retried start: the first stands
    records.keep_token("t1", "s1", "int_1", 0, "tok-1")
    records.keep_token("t1", "s1", "int_1", 0, "tok-2")  # a redelivered park message
    assert records.read("t1", "s1", "int_1", 0) == ParkRecord(handle="arn-1", token="tok-1")


def test_r13_the_token_may_land_before_the_start_is_recorded(records: Any) -> None:
    """ParkBranch's park message can overtake the engine's write of the start."""
    records.keep_token("t1", "s1", "int_1", 0, "tok-1")
    records.started("t1", "s1", "int_1", 0, "arn-1")
    assert records.read("t1", "s1", "int_1", 0) == ParkRecord(handle="arn-1", token="tok-1")


def test_r13_each_raise_has_its_own_record(records: Any) -> None:
    """A raise again (another generation) starts from nothing; the earlier raise's stays its own."""
    records.started("t1", "s1", "int_1", 0, "arn-0")
    records.keep_token("t1", "s1", "int_1", 0, "tok-0")
    assert records.read("t1", "s1", "int_1", 1) is None
    records.keep_token("t1", "s1", "int_1", 1, "tok-1")
    assert records.read("t1", "s1", "int_1", 1) == ParkRecord(token="tok-1")
    assert records.read("t1", "s1", "int_1", 0) == ParkRecord(handle="arn-0", token="tok-0")
    assert records.read("t1", "s2", "int_1", 0) is None and records.read("t2", "s1", "int_1", 0) is None


def test_capacity_refusals_only_count_up_and_stop_once_started(records: Any) -> None:
    records.waiting("t1", "s1", "int_1", 0, 1)
    records.waiting("t1", "s1", "int_1", 0, 2)
    records.waiting("t1", "s1", "int_1", 0, 2)  # the same refusal again
    records.waiting("t1", "s1", "int_1", 0, 1)  # a stale timer's
    assert records.read("t1", "s1", "int_1", 0) == ParkRecord(waits=2)
    records.started("t1", "s1", "int_1", 0, "arn-1")
    records.waiting("t1", "s1", "int_1", 0, 3)  # a refusal that lost to the start
    assert records.read("t1", "s1", "int_1", 0) == ParkRecord(handle="arn-1", waits=2)


def test_r13_drop_removes_only_a_record_its_token_made(records: Any) -> None:
    """A park message naming no interrupt leaves nothing behind; it cannot drop a started park's
    record, nor one holding another token."""
    records.keep_token("t1", "s1", "int_gone", 0, "tok-x")
    records.drop("t1", "s1", "int_gone", 0, "tok-y")
    assert records.read("t1", "s1", "int_gone", 0) == ParkRecord(token="tok-x")
    records.drop("t1", "s1", "int_gone", 0, "tok-x")
    assert records.read("t1", "s1", "int_gone", 0) is None
    records.drop("t1", "s1", "int_gone", 0, "tok-x")  # again: nothing to drop
    records.started("t1", "s1", "int_1", 0, "arn-1")
    records.keep_token("t1", "s1", "int_1", 0, "tok-1")
    records.drop("t1", "s1", "int_1", 0, "tok-1")
    assert records.read("t1", "s1", "int_1", 0) == ParkRecord(handle="arn-1", token="tok-1")
