"""A6 (the audit trail and the inbox query), against the real services and store on moto (the
Inbox and History indexes as template.yaml declares them). Over HTTP on the local stack:
tests/e2e/test_expiry_inbox_e2e.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.core.errors import Refusal
from holdpoint.core.expiry import DAY, Declared
from holdpoint.core.policy import Approvers, Policy
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.core.state import Interrupt
from holdpoint.ports import InboxRow
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.inbox import InboxFilters, inbox, listing
from tests.harness import Harness
from tests.unit.test_api import assert_error, call_api, start_session
from tests.waiting import wait_for

pytestmark = pytest.mark.usefixtures("memory")


@pytest.fixture
def handlers(aws: dict[str, str]) -> Iterator[None]:
    assembly.reset()
    yield
    assembly.reset()


def new_session(h: Harness, text: str = "Email Bob", agent_id: str = "assistant") -> str:
    """Another session of the harness's tenant, parked on the seed's `confirm` interrupt."""
    inp = ClientMessageInput.model_validate({"type": "client.message", "agent_id": agent_id,
                                             "message": {"role": "user", "content": text}})
    h.session_id = sessions.submit(h.store, h.queue, h.caller, None, inp).session_id
    h.settle()
    return h.session_id


def ids(h: Harness, caller: Caller | None = None, **filters: Any) -> list[str]:
    page = inbox(h.store, signing, caller or h.caller, 50, None, InboxFilters(**filters))
    return [i["interrupt_id"] for i in page["interrupts"]]


def raw_item(h: Harness, session_id: str, interrupt_id: str) -> dict[str, Any]:
    return boto3.client("dynamodb").get_item(TableName="holdpoint", Key={
        "PK": {"S": f"T#{h.caller.tenant}#S#{session_id}"}, "SK": {"S": f"I#{interrupt_id}"}})["Item"]


def next_millisecond() -> None:
    """Wait until the clock has moved into a later millisecond, so the next interrupt's `created_at`
    sorts after the last one's."""
    start = int(time.time() * 1000)
    wait_for(lambda: int(time.time() * 1000) > start, "the next millisecond", timeout=5, poll=0.001)


@pytest.fixture
def three() -> tuple[Harness, dict[str, tuple[str, str]]]:
    """One resolved, one expired and one open interrupt, in three sessions, oldest first."""
    h = Harness(agent={"interrupt_expires_in": 600, "retention_days": 7})
    out = {}
    for name in ("resolved", "expired", "open"):
        sid = new_session(h)
        out[name] = (sid, h.open_interrupt()["interrupt_id"])
        next_millisecond()  # distinct created_at milliseconds: a stable newest-first order
    h.session_id = out["resolved"][0]
    h.resume(out["resolved"][1], {"approved": True})
    h.session_id = out["expired"][0]
    h.wake(out["expired"][1], "expired")
    return h, out


def test_a6_status_lists_open_resolved_expired_or_all_newest_first(three: Any) -> None:
    h, made = three
    assert ids(h) == ids(h, status="open") == [made["open"][1]]
    assert ids(h, status="resolved") == [made["resolved"][1]]
    assert ids(h, status="expired") == [made["expired"][1]]
    assert ids(h, status="all") == [made["open"][1], made["expired"][1], made["resolved"][1]]


def test_a6_closed_interrupts_carry_their_audit_trail(three: Any) -> None:
    h, made = three
    [resolved] = inbox(h.store, signing, h.caller, 10, None, InboxFilters(status="resolved"))["interrupts"]
    assert resolved["session_id"] == made["resolved"][0] and resolved["agent_id"] == "assistant"
    assert resolved["status"] == "resolved" and resolved["resolution"] == {"approved": True}
    assert resolved["responder"] == {"subject": "user-1", "origin": "client"} and resolved["owner"] == "user-1"
    assert resolved["action"]["fingerprint"] and resolved["resolved_at"] >= resolved["created_at"]
    assert 0 <= resolved["decision_secs"] < 60
    [expired] = inbox(h.store, signing, h.caller, 10, None, InboxFilters(status="expired"))["interrupts"]
    assert expired["resolution"] == {"status": "cancelled", "reason": "expired"}
    assert expired["responder"] == {"origin": "system", "subject": "expiry"}
    [still] = inbox(h.store, signing, h.caller, 10, None)["interrupts"]
    assert still["status"] == "open" and "resolved_at" not in still and "decision_secs" not in still


def test_a6_listing_includes_requester_approvals_and_comments_when_recorded() -> None:
    interrupt = Interrupt(interrupt_id="i", origin="worker", reason="r", anchor=None, dedup_key="d",
                          created_at="2026-05-01T09:30:00.000Z", status="resolved",
                          resolved_at="2026-05-01T09:31:30.500Z")
    body = {"requester": "ann", "approvals": [{"subject": "bob", "comment": "fine"}], "comment": "ok"}
    out = listing(InboxRow("s", "a", interrupt, body), Caller("t1", "ann", "operator"))
    assert (out["requester"], out["approvals"], out["comment"]) == ("ann", body["approvals"], "ok")
    assert out["decision_secs"] == 90.5 and out["delivery"] == "waiting"  # closed, the worker not told yet


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a6_retention_days_sets_the_ttl_of_closed_interrupts_only(three: Any) -> None:
    h, made = three
    now = time.time()
    for name in ("resolved", "expired"):
        ttl = int(raw_item(h, *made[name])["ttl"]["N"])
        assert now + 7 * DAY - 120 < ttl <= now + 7 * DAY + 1, name
    assert "ttl" not in raw_item(h, *made["open"])
    # the engine's later rewrite of the resolved interrupt (woken) keeps its TTL, out of the open inbox
    item = raw_item(h, *made["resolved"])
    assert "GSI1PK" not in item and item["GSI3PK"]["S"] == "T#t1#ALL" and item["status"]["S"] == "resolved"
    assert raw_item(h, *made["open"])["GSI1PK"]["S"] == "T#t1#OPEN"


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a6_no_retention_keeps_closed_interrupts() -> None:
    h = Harness()
    sid = new_session(h)
    iid = h.open_interrupt()["interrupt_id"]
    h.resume(iid, {"approved": False})
    assert "ttl" not in raw_item(h, sid, iid) and ids(h, status="resolved") == [iid]


def test_a6_filters_by_agent_reason_age_and_nearness_of_expiry() -> None:
    h = Harness(agent={"interrupt_expires_in": 600}, origin="operator")
    config = h.store.get_agent("t1", "assistant")
    h.store.put_agent("t1", "other", {**(config or {}), "interrupt_expires_in": None})
    first = new_session(h)
    worker_iid = h.open_interrupt()["interrupt_id"]
    sessions.raise_interrupt(h.store, h.queue, h.caller, first, reason="review", payload=None, global_=True,
                             interrupt_id="op-1", expires_in=30, request_id="r1")
    new_session(h, agent_id="other")
    other_iid = h.open_interrupt()["interrupt_id"]
    assert ids(h, agent_id="other") == [other_iid]
    assert set(ids(h, agent_id="assistant")) == {worker_iid, "op-1"}
    assert ids(h, reason="review") == ["op-1"] and ids(h, reason="nope") == []
    assert ids(h, expiring_within=60) == ["op-1"]
    assert set(ids(h, expiring_within=3600)) == {worker_iid, "op-1"}  # `other` never expires
    assert ids(h, older_than=3600) == []
    later = inbox(h.store, signing, h.caller, 50, None, InboxFilters(older_than=3600), clock=lambda: time.time() + 7200)
    assert len(later["interrupts"]) == 3


def test_a6_approver_me_lists_what_the_caller_may_answer() -> None:
    h = Harness(origin="operator")
    sid = new_session(h)
    worker_iid = h.open_interrupt()["interrupt_id"]
    sessions.raise_interrupt(h.store, h.queue, h.caller, sid, reason="review", payload=None, global_=False,
                             interrupt_id="op-1", expires_in=None, request_id="r1")
    client = Caller("t1", "user-1", "client")
    assert ids(h, client, approver_me=True) == [worker_iid]
    assert ids(h, approver_me=True) == ["op-1", worker_iid]
    assert ids(h, client) == ["op-1", worker_iid]  # listed, but not theirs to answer


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a6_pages_follow_a_sealed_cursor_bound_to_the_tenant_and_status() -> None:
    h = Harness()
    made = []
    for _ in range(3):
        new_session(h)
        made.append(h.open_interrupt()["interrupt_id"])
        next_millisecond()
    seen, cursor = [], None
    for _ in range(4):
        page = inbox(h.store, signing, h.caller, 1, cursor, InboxFilters(status="all"))
        seen += [i["interrupt_id"] for i in page["interrupts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == made[::-1]
    page = inbox(h.store, signing, h.caller, 1, None)
    for caller, filters in ((h.caller, InboxFilters(status="all")), (Caller("t2", "x", "operator"), InboxFilters())):
        with pytest.raises(Refusal) as refused:
            inbox(h.store, signing, caller, 1, page["next_cursor"], filters)
        assert refused.value.param == "cursor"
    # a filter that skips most of each index page still fills the page and pages on
    first = inbox(h.store, signing, h.caller, 1, None, InboxFilters(status="all", reason="confirm"))
    assert [i["interrupt_id"] for i in first["interrupts"]] == [made[-1]] and first["next_cursor"]


def test_a6_inbox_query_parameters_are_checked_naming_the_parameter(handlers: None) -> None:
    h = Harness(tenant="dev")
    start_session(h)
    for query, param in (({"status": "closed"}, "status"), ({"older_than": "-1"}, "older_than"),
                         ({"expiring_within": "soon"}, "expiring_within"), ({"approver": "you"}, "approver"),
                         ({"agent_id": "no such id"}, "agent_id"), ({"reason": ""}, "reason"),
                         ({"limit": "0"}, "limit"), ({"cursor": "forged"}, "cursor")):
        assert_error(*call_api("GET", "/v1/interrupts", query=query), 400, param=param)
    status, page = call_api("GET", "/v1/interrupts", query={"status": "all", "approver": "me", "agent_id": "assistant",
                                                             "reason": "confirm", "expiring_within": "0",
                                                             "older_than": "0"})
    assert status == 200 and page == {"interrupts": [], "next_cursor": None}
    status, page = call_api("GET", "/v1/interrupts", query={"status": "open", "approver": "me"})
    assert status == 200 and [i["reason"] for i in page["interrupts"]] == ["confirm"]


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a6_approver_me_follows_the_approver_policy_and_its_escalation() -> None:
    from tests.unit.test_expiry import fire, timer_messages

    h = Harness(origin="operator")
    sid = new_session(h, "say hi")
    sessions.raise_interrupt(h.store, h.queue, h.caller, sid, reason="sign-off", payload=None, global_=False,
                             interrupt_id="int-p", expires_in=None, request_id="r1",
                             approval=Policy(subjects=("ann",), escalate_to=Approvers(subjects=("bob",))),
                             declared=Declared(escalate_after=60))
    h.settle()
    ann, bob = Caller("t1", "ann", "operator"), Caller("t1", "bob", "operator")
    assert ids(h, ann, approver_me=True) == ["int-p"] and ids(h, bob, approver_me=True) == []
    [escalation] = timer_messages(h)
    fire(h, escalation)  # A5: the escalation admits the policy's escalate_to (A2)
    assert ids(h, bob, approver_me=True) == ["int-p"]
