"""Quotas (docs/SECURITY.md, "Quotas"): the limits read from the environment, the stream wait
leases (exact, given back, expiring on their own after a crash), and the store's counter refusal
told apart from a conflict."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from holdpoint.aws.leases import LEASE_SECS, WaitLeases
from holdpoint.aws.store import quota_refusal
from holdpoint.core import quotas
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.quotas import Quotas

pytestmark = pytest.mark.usefixtures("aws")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def leases(clock: Clock, **limits: int) -> WaitLeases:
    return WaitLeases(limits=Quotas(**limits), clock=clock)


def test_quota_limits_come_from_the_environment_and_keep_their_defaults_otherwise() -> None:
    env = {"HOLDPOINT_QUOTA_OPEN_INTERRUPTS_PER_SESSION": "3", "HOLDPOINT_QUOTA_SESSIONS_PER_SECOND": "",
           "HOLDPOINT_QUOTA_STREAM_WAITS_PER_CALLER": "nope", "HOLDPOINT_QUOTA_STREAM_WAITS_PER_TENANT": "0"}
    assert quotas.from_env(env) == Quotas(open_interrupts_per_session=3)


def test_quota_a_caller_holds_at_most_its_limit_and_a_given_back_lease_frees_a_slot() -> None:
    clock = Clock()
    waits = leases(clock, stream_waits_per_caller=2)
    first = waits.acquire("t1", "client:alice")
    waits.acquire("t1", "client:alice")
    with pytest.raises(QuotaExceeded) as refused:
        waits.acquire("t1", "client:alice")
    assert refused.value.limit == "stream_waits_per_caller"
    assert 1 <= refused.value.retry_after <= LEASE_SECS
    waits.acquire("t1", "client:bob")  # another caller has its own
    waits.acquire("t2", "client:alice")  # and so does the same subject in another tenant
    waits.release("t1", "client:alice", first)
    waits.acquire("t1", "client:alice")


def test_quota_a_tenant_holds_at_most_its_limit_across_callers() -> None:
    waits = leases(Clock(), stream_waits_per_tenant=3)
    for who in ("a", "b", "c"):
        waits.acquire("t1", who)
    with pytest.raises(QuotaExceeded) as refused:
        waits.acquire("t1", "d")
    assert refused.value.limit == "stream_waits_per_tenant"


def test_quota_all_tenants_together_hold_at_most_the_total_spread_over_its_shards() -> None:
    """Waiting never starves serving: past the deployment's total no tenant waits, whatever its own room."""
    waits = leases(Clock(), stream_waits_total=11)
    assert sum(allowed for _, allowed in waits.shards()) == 11 and len(waits.shards()) == 8
    held = [waits.acquire(f"t{i}", f"client:{i}") for i in range(11)]
    with pytest.raises(QuotaExceeded) as refused:
        waits.acquire("t99", "client:new")
    assert refused.value.limit == "stream_waits_total" and refused.value.allowed == 11
    assert 1 <= refused.value.retry_after <= LEASE_SECS
    waits.release("t3", "client:3", held[3])
    waits.acquire("t99", "client:new")  # the slot given back is anyone's


def test_quota_a_total_below_the_shard_count_uses_that_many_holders() -> None:
    waits = leases(Clock(), stream_waits_total=2)
    assert [allowed for _, allowed in waits.shards()] == [1, 1]
    waits.acquire("t1", "a")
    waits.acquire("t2", "b")
    with pytest.raises(QuotaExceeded, match="stream waits total"):
        waits.acquire("t3", "c")


def test_quota_a_crashed_waits_lease_expires_by_itself() -> None:
    clock = Clock()
    waits = leases(clock, stream_waits_per_caller=1)
    waits.acquire("t1", "client:alice")  # never given back: the function died holding it
    with pytest.raises(QuotaExceeded):
        waits.acquire("t1", "client:alice")
    clock.now += LEASE_SECS + 0.001
    waits.acquire("t1", "client:alice")


def test_quota_leases_given_back_leave_nothing_in_the_table() -> None:
    waits = leases(Clock())
    with waits.held("t1", "client:alice"):
        assert boto3.client("dynamodb").scan(TableName="holdpoint")["Count"] == 3  # caller, tenant, one shard
    assert boto3.client("dynamodb").scan(TableName="holdpoint")["Count"] == 0


def cancelled(*codes: str) -> list[str]:
    """A cancelled transaction's reasons, one per item in the order written."""
    return list(codes)


def test_quota_a_cancellation_by_the_counter_alone_is_a_refusal_and_any_other_is_a_conflict() -> None:
    counted: list[tuple[dict[str, Any], str, int]] = [({}, "open_interrupts_per_tenant", 4)]
    refused = quota_refusal(cancelled("None", "None", "ConditionalCheckFailed"), 2, counted)
    assert refused is not None and refused.limit == "open_interrupts_per_tenant" and refused.allowed == 4
    assert quota_refusal(cancelled("ConditionalCheckFailed", "None", "ConditionalCheckFailed"), 2, counted) is None
    assert quota_refusal(cancelled("None", "None", "TransactionConflict"), 2, counted) is None
    assert quota_refusal(cancelled("ConditionalCheckFailed", "None"), 2, []) is None
