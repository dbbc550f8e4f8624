"""The `ports.WaitLeases` contract (docs/SECURITY.md, "Quotas"), held by both: the DynamoDB leases
on moto (aws/leases.py) and their in-memory twin (memory/leases.py). A stream wait holds a lease
for its block: one caller, one tenant and the whole deployment hold at most their limits at
once, a lease is given back however the block ends, and one never given back (a crash) expires
by itself `LEASE_SECS` after it was taken."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.quotas import LEASE_SECS, Quotas
from holdpoint_local.memory.leases import MemoryWaitLeases

LEASES = ["memory", "dynamodb"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=LEASES)
def make(request: pytest.FixtureRequest, clock: Clock) -> Iterator[Callable[..., Any]]:
    """Builds leases of one kind with the limits given (`make(stream_waits_per_caller=2)`) on `clock`."""
    if request.param == "memory":
        yield lambda **limits: MemoryWaitLeases(Quotas(**limits), clock)
        return
    request.getfixturevalue("aws")
    from holdpoint.aws.leases import WaitLeases

    yield lambda **limits: WaitLeases(limits=Quotas(**limits), clock=clock)


def refusal(leases: Any, tenant: str, caller: str) -> QuotaExceeded:
    """The refusal a wait gets now (the block never runs)."""
    with pytest.raises(QuotaExceeded) as refused, leases.held(tenant, caller):
        pytest.fail("a wait past its limit ran")
    return refused.value


def test_quota_a_caller_holds_at_most_its_limit_and_others_keep_their_own(make: Callable[..., Any]) -> None:
    leases = make(stream_waits_per_caller=2)
    with ExitStack() as waits:
        waits.enter_context(leases.held("t1", "client:alice"))
        waits.enter_context(leases.held("t1", "client:alice"))
        refused = refusal(leases, "t1", "client:alice")
        assert (refused.limit, refused.allowed) == ("stream_waits_per_caller", 2)
        waits.enter_context(leases.held("t1", "client:bob"))  # another caller has its own
        waits.enter_context(leases.held("t2", "client:alice"))  # and so does the same subject in another tenant


def test_quota_a_lease_is_given_back_when_its_block_ends_however_it_ends(make: Callable[..., Any]) -> None:
    leases = make(stream_waits_per_caller=1)
    with leases.held("t1", "client:alice"):
        assert refusal(leases, "t1", "client:alice").limit == "stream_waits_per_caller"
    with pytest.raises(RuntimeError), leases.held("t1", "client:alice"):
        raise RuntimeError("the wait failed")
    with leases.held("t1", "client:alice"):  # both given back
        pass


def test_quota_a_tenant_holds_at_most_its_limit_across_callers(make: Callable[..., Any]) -> None:
    leases = make(stream_waits_per_tenant=3)
    with ExitStack() as waits:
        for who in ("a", "b", "c"):
            waits.enter_context(leases.held("t1", who))
        refused = refusal(leases, "t1", "d")
        assert (refused.limit, refused.allowed) == ("stream_waits_per_tenant", 3)
        waits.enter_context(leases.held("t2", "d"))


def test_quota_the_caller_limit_refuses_before_the_tenant_limit(make: Callable[..., Any]) -> None:
    leases = make(stream_waits_per_caller=1, stream_waits_per_tenant=1)
    with leases.held("t1", "a"):
        assert refusal(leases, "t1", "a").limit == "stream_waits_per_caller"
        assert refusal(leases, "t1", "b").limit == "stream_waits_per_tenant"


def test_quota_all_tenants_together_hold_at_most_the_total(make: Callable[..., Any]) -> None:
    """Waiting never starves serving: past the deployment's total no tenant waits, whatever its own room."""
    leases = make(stream_waits_total=11)
    with ExitStack() as waits:
        held = [ExitStack() for _ in range(11)]
        for i, one in enumerate(held):
            one.enter_context(leases.held(f"t{i}", f"client:{i}"))
            waits.enter_context(one)
        refused = refusal(leases, "t99", "client:new")
        assert (refused.limit, refused.allowed) == ("stream_waits_total", 11)
        held[3].close()
        waits.enter_context(leases.held("t99", "client:new"))  # the slot given back is anyone's


def test_quota_a_refused_wait_is_told_when_the_first_lease_frees(make: Callable[..., Any], clock: Clock) -> None:
    leases = make(stream_waits_per_caller=2)
    with ExitStack() as waits:
        waits.enter_context(leases.held("t1", "a"))
        clock.now += 10
        waits.enter_context(leases.held("t1", "a"))
        assert refusal(leases, "t1", "a").retry_after == LEASE_SECS - 10
        clock.now += LEASE_SECS - 10.5
        assert refusal(leases, "t1", "a").retry_after == 1  # never less than a second


def test_quota_a_crashed_waits_lease_expires_by_itself(make: Callable[..., Any], clock: Clock) -> None:
    leases = make(stream_waits_per_caller=1)
    crashed = ExitStack()
    crashed.enter_context(leases.held("t1", "client:alice"))  # never given back: the function died holding it
    clock.now += LEASE_SECS - 0.001
    assert refusal(leases, "t1", "client:alice").limit == "stream_waits_per_caller"
    clock.now += 0.002
    with leases.held("t1", "client:alice"):
        crashed.close()  # its release, long after: the lease had expired, so nothing is given back
        assert refusal(leases, "t1", "client:alice").limit == "stream_waits_per_caller"


def test_quota_a_lease_given_back_after_it_expired_frees_no_one_elses(make: Callable[..., Any], clock: Clock) -> None:
    """The late end of a block whose lease expired gives back nothing of the lease taken since."""
    leases = make(stream_waits_per_caller=1)
    with leases.held("t1", "client:alice"):
        clock.now += LEASE_SECS + 1
        later = ExitStack()
        later.enter_context(leases.held("t1", "client:alice"))
    assert refusal(leases, "t1", "client:alice").limit == "stream_waits_per_caller"
    later.close()
    with leases.held("t1", "client:alice"):
        pass
