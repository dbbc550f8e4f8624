"""The `ports.Connections` contract (docs/PROTOCOL.md, "Live events"; docs/SECURITY.md, "Quotas"),
held by both: the DynamoDB connections on moto (aws/connections.py) and their in-memory twin
(memory/connections.py). A connection follows sessions of its own tenant only, at most
`MAX_FOLLOWED` of them, each in a format; a session's followers and a caller's open connections
stop at their limits, a slot held already counts once, and a slot is given back by a drop, a
disconnect or its end passing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.quotas import MAX_FOLLOWED, Quotas
from holdpoint_local.memory.connections import MemoryConnections

CONNECTIONS = ["memory", "dynamodb"]
T0 = 1_000_000
HOUR = T0 + 3600


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=CONNECTIONS)
def make(request: pytest.FixtureRequest, clock: Clock) -> Iterator[Callable[..., Any]]:
    """Builds connections of one kind with the limits given, on `clock`."""
    if request.param == "memory":
        yield lambda **limits: MemoryConnections(clock, Quotas(**limits))
        return
    request.getfixturevalue("aws")
    from holdpoint.aws.connections import Connections

    yield lambda **limits: Connections(clock=clock, limits=Quotas(**limits))


def test_live_a_connection_follows_sessions_of_its_own_tenant_in_its_format(make: Callable[..., Any]) -> None:
    connections = make()
    for conn in ("c1", "c2"):
        connections.open(conn, "t", HOUR)
    assert connections.subscribe("t", "s1", "c1", HOUR)
    assert connections.subscribe("t", "s1", "c2", HOUR, "ag-ui")
    assert connections.followers("t", "s1") == {"c1": "events", "c2": "ag-ui"}
    assert connections.subscribe("t", "s1", "c1", HOUR, "ag-ui")  # following again sets the format
    assert connections.followers("t", "s1") == {"c1": "ag-ui", "c2": "ag-ui"}
    assert sorted(connections.following("t", "s1")) == ["c1", "c2"]
    assert connections.subscribe("u", "s1", "c1", HOUR) is False  # not open for tenant u
    assert connections.subscribe("t", "s1", "never-opened", HOUR) is False
    assert connections.followers("u", "s1") == {} and connections.followers("t", "s2") == {}


def test_live_a_connection_follows_at_most_its_limit_of_sessions(make: Callable[..., Any]) -> None:
    connections = make()
    connections.open("c1", "t", HOUR)
    for i in range(MAX_FOLLOWED):
        assert connections.subscribe("t", f"s{i}", "c1", HOUR)
    assert connections.subscribe("t", "one-more", "c1", HOUR) is False
    assert connections.following("t", "one-more") == []
    assert connections.subscribe("t", "s0", "c1", HOUR, "ag-ui")  # one it follows already


def test_quota_live_followers_of_a_session_stop_at_the_limit_and_a_resubscribe_counts_once(
        make: Callable[..., Any]) -> None:
    connections = make(live_followers_per_session=2)
    for conn in ("c1", "c2", "c3"):
        connections.open(conn, "t", HOUR)
    assert connections.subscribe("t", "s1", "c1", HOUR) and connections.subscribe("t", "s1", "c2", HOUR)
    with pytest.raises(QuotaExceeded) as refused:
        connections.subscribe("t", "s1", "c3", HOUR)
    assert (refused.value.limit, refused.value.allowed) == ("live_followers_per_session", 2)
    assert connections.subscribe("t", "s1", "c1", HOUR)  # held already: counts once
    assert sorted(connections.following("t", "s1")) == ["c1", "c2"]
    connections.drop("t", "s1", "c1")
    connections.drop("t", "s1", "c1")  # dropped already: a no-op
    assert connections.subscribe("t", "s1", "c3", HOUR)
    assert sorted(connections.following("t", "s1")) == ["c2", "c3"]


def test_quota_live_a_refused_follow_takes_none_of_the_connections_sessions(make: Callable[..., Any]) -> None:
    connections = make(live_followers_per_session=1)
    for conn in ("c1", "c2"):
        connections.open(conn, "t", HOUR)
    connections.subscribe("t", "full", "c1", HOUR)
    with pytest.raises(QuotaExceeded):
        connections.subscribe("t", "full", "c2", HOUR)
    for i in range(MAX_FOLLOWED):
        assert connections.subscribe("t", f"s{i}", "c2", HOUR)


def test_quota_live_connections_of_a_caller_stop_at_the_limit_and_others_still_connect(
        make: Callable[..., Any]) -> None:
    connections = make(live_connections_per_caller=2)
    connections.open("c1", "t", HOUR, "client:mallory")
    connections.open("c2", "t", HOUR, "client:mallory")
    connections.open("c1", "t", HOUR, "client:mallory")  # a repeated $connect counts once
    with pytest.raises(QuotaExceeded) as refused:
        connections.open("c3", "t", HOUR, "client:mallory")
    assert (refused.value.limit, refused.value.allowed) == ("live_connections_per_caller", 2)
    assert connections.subscribe("t", "s1", "c3", HOUR) is False  # the refused connection is not open
    connections.open("c4", "t", HOUR, "client:bob")  # another caller
    connections.open("c5", "u", HOUR, "client:mallory")  # the same subject in another tenant
    connections.disconnect("c1")
    connections.open("c3", "t", HOUR, "client:mallory")


def test_live_a_disconnect_drops_every_session_followed_and_the_callers_slot(make: Callable[..., Any]) -> None:
    connections = make(live_connections_per_caller=1)
    connections.open("c1", "t", HOUR, "client:alice")
    connections.open("c2", "t", HOUR, "client:bob")
    for sid in ("s1", "s2"):
        connections.subscribe("t", sid, "c1", HOUR)
        connections.subscribe("t", sid, "c2", HOUR)
    connections.disconnect("c1")
    connections.disconnect("c1")  # gone already
    connections.disconnect("never-opened")
    assert connections.following("t", "s1") == ["c2"] and connections.following("t", "s2") == ["c2"]
    assert connections.subscribe("t", "s3", "c1", HOUR) is False
    connections.open("c3", "t", HOUR, "client:alice")  # alice's slot came back


def test_live_a_slot_past_its_end_is_gone_and_frees_its_place(make: Callable[..., Any], clock: Clock) -> None:
    """A connection whose `$disconnect` never ran: its slots end with it (API Gateway's 2 hours)."""
    connections = make(live_followers_per_session=1, live_connections_per_caller=1)
    connections.open("c1", "t", T0 + 10, "client:alice")
    connections.subscribe("t", "s1", "c1", T0 + 10)
    clock.now = T0 + 9
    assert connections.following("t", "s1") == ["c1"]
    clock.now = T0 + 10
    assert connections.followers("t", "s1") == {}
    connections.open("c2", "t", HOUR, "client:alice")
    assert connections.subscribe("t", "s1", "c2", HOUR)
    with pytest.raises(QuotaExceeded):  # c1's slot ended: following again is a new follower
        connections.subscribe("t", "s1", "c1", HOUR)
    assert connections.following("t", "s1") == ["c2"]


def test_quota_live_a_slot_held_already_is_never_refused_even_past_a_lowered_limit(
        make: Callable[..., Any]) -> None:
    """A deploy that lowers a limit leaves the followers and connections in place: following again
    or a repeated `$connect` keeps its slot; only a new one is refused."""
    connections = make(live_followers_per_session=2, live_connections_per_caller=2)
    for conn in ("c1", "c2"):
        connections.open(conn, "t", HOUR, "client:alice")
        connections.subscribe("t", "s1", conn, HOUR)
    connections.limits = Quotas(live_followers_per_session=1, live_connections_per_caller=1)
    assert connections.subscribe("t", "s1", "c1", HOUR, "ag-ui")
    connections.open("c2", "t", HOUR, "client:alice")
    assert connections.followers("t", "s1") == {"c1": "ag-ui", "c2": "events"}
    connections.open("c3", "t", HOUR, "client:bob")
    with pytest.raises(QuotaExceeded):
        connections.subscribe("t", "s1", "c3", HOUR)
