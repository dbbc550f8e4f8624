"""A5 (expiry with a declared outcome, reminders, escalation) and A6 (the inbox query and audit
trail) over HTTP on the local stack: the real handlers, DynamoDB, Step Functions executing
ParkBranch and the Timer state machine, and the signed HTTP seed worker."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from holdpoint.aws.queue import group_id
from holdpoint.aws.timers import Timers
from holdpoint.core import expiry
from tests.security.probes import refusal, table_count
from tests.stack import Api, declare_agent, resumed_triggers, wait_execution
from tests.waiting import wait_for

BOSS = {"subjects": ["boss"]}


def events_of(api: Api, sid: str, type_: str) -> list[dict[str, Any]]:
    return [e for e in api.events(sid) if e["type"] == type_]


def timer_inputs(stack: Any, sid: str) -> list[dict[str, Any]]:
    """The timers set for the session's interrupts (reminders and escalation): pending or fired."""
    timers = [*stack.timers.fired, *Timers(client=stack.client("scheduler")).pending()]
    return [{"seconds": t.seconds, "message": t.message, "name": t.name} for t in timers
            if t.message.get("kind") == expiry.TIMER_MESSAGE and t.message["session_id"] == sid]


def test_a5_expiry_resolves_with_the_declared_outcome_over_http(api: Api, stack: Any, worker: Any) -> None:
    _, seen = worker
    declare_agent(api, worker[0], interrupt_expires_in=2, interrupt_on_expiry="approve")
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    assert interrupt["on_expiry"] == "approve" and interrupt["expires_at"]
    final = api.wait_status(sid, "done", timeout=90)  # ParkBranch's TimeoutSeconds, then the Expire state
    assert final["messages"][-1]["content"] == "Email sent."
    [resumed] = resumed_triggers(seen, sid)
    assert resumed["payload"] == {"status": "resolved", "reason": "expired", "on_expiry": "approve",
                                  "approved": True}
    assert (resumed["verdict"], resumed["channel"], resumed["expired"]) == ("approved", "expiry", True)
    [expired] = events_of(api, sid, "interrupt.expired")
    assert expired["data"]["outcome"] == "approve"
    listed = api.ok("GET", "/v1/interrupts?status=expired")["interrupts"]
    assert [(i["session_id"], i["status"], i["resolution"]["approved"]) for i in listed] == [(sid, "expired", True)]


def test_a5_reminder_and_escalation_fire_once_on_scheduler_timers(api: Api, stack: Any, worker: Any) -> None:
    declare_agent(api, worker[0], interrupt_remind_after=[1], interrupt_escalate_after=2,
                  approval={"escalate_to": BOSS})
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    wait_for(lambda: events_of(api, sid, "interrupt.escalated"), "the escalation", 60)
    wait_for(lambda: events_of(api, sid, "interrupt.reminded"), "the reminder", 60)
    timers = timer_inputs(stack, sid)
    assert sorted((t["seconds"], t["message"]["timer"]) for t in timers) == [(1, "remind"), (2, "escalate")]
    assert api.view(sid)["interrupts"][0]["escalated"] is True
    # SQS delivers a timer's message again (another dedup id): the engine changes nothing. The
    # resume's wake follows in the same FIFO group, so once the session is done both were handled.
    sqs = stack.client("sqs")
    for timer in timers:
        sqs.send_message(QueueUrl=stack.env["WORK_QUEUE_URL"], MessageBody=json.dumps(timer["message"]),
                         MessageGroupId=group_id("dev", sid), MessageDeduplicationId=f"again-{timer['name']}")
    wait_execution(stack, sid, iid, "RUNNING")
    assert api.resume(sid, iid, {"approved": True}).json()["noop"] is False
    api.wait_status(sid, "done")
    assert len(events_of(api, sid, "interrupt.reminded")) == 1
    assert len(events_of(api, sid, "interrupt.escalated")) == 1


def test_a5_a_bad_delay_is_refused_where_it_is_declared_over_http(api: Api, stack: Any) -> None:
    sid = api.start()
    api.wait_status(sid, "interrupted")
    before = table_count(stack)
    for body, param in (({"reason": "r", "remind_after": [-5]}, "remind_after[0]"),
                        ({"reason": "r", "escalate_after": 1.5}, "escalate_after"),
                        ({"reason": "r", "expires_in": 10, "remind_after": [10]}, "remind_after[0]"),
                        ({"reason": "r", "on_expiry": "later"}, "on_expiry")):
        refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts", body), 400, code="validation_error", param=param)
    refusal(api.req("PUT", "/v1/agents/assistant", {"interrupt_remind_after": [0]}), 400,
            param="interrupt_remind_after[0]")
    refusal(api.req("PUT", "/v1/agents/assistant", {"retention_days": 0}), 400, param="retention_days")
    assert table_count(stack) == before


def test_a6_inbox_query_and_audit_trail_over_http(api: Api, stack: Any, worker: Any) -> None:
    declare_agent(api, worker[0], retention_days=30, interrupt_expires_in=3600)
    done, parked = api.start(), api.start()
    raised = {sid: api.wait_status(sid, "interrupted")["interrupts"][0]["created_at"] for sid in (done, parked)}
    iid = api.view(done)["interrupts"][0]["interrupt_id"]
    wait_execution(stack, done, iid, "RUNNING")
    assert api.resume(done, iid, {"approved": True}).json()["noop"] is False
    api.wait_status(done, "done")
    [resolved] = api.ok("GET", "/v1/interrupts?status=resolved")["interrupts"]
    assert resolved["session_id"] == done and resolved["resolution"] == {"approved": True}
    assert resolved["responder"]["origin"] == "client" and resolved["decision_secs"] >= 0
    assert resolved["action"]["fingerprint"] and resolved["agent_id"] == "assistant"
    item = stack.client("dynamodb").get_item(TableName=stack.env["TABLE_NAME"], Key={
        "PK": {"S": f"T#dev#S#{done}"}, "SK": {"S": f"I#{iid}"}})["Item"]
    assert abs(int(item["ttl"]["N"]) - (time.time() + 30 * 86_400)) < 600  # retention_days=30: the TTL
    everything = api.ok("GET", "/v1/interrupts?status=all")["interrupts"]
    assert [i["session_id"] for i in everything] == sorted(raised, key=raised.__getitem__, reverse=True)
    assert [i["session_id"] for i in api.ok("GET", "/v1/interrupts")["interrupts"]] == [parked]
    mine = api.ok("GET", "/v1/interrupts?approver=me&agent_id=assistant&reason=confirm&expiring_within=7200")
    assert [i["session_id"] for i in mine["interrupts"]] == [parked]
    assert api.ok("GET", "/v1/interrupts?expiring_within=60")["interrupts"] == []
    assert api.ok("GET", "/v1/interrupts?status=all&older_than=3600")["interrupts"] == []
    page = api.ok("GET", "/v1/interrupts?status=all&limit=1")
    assert page["next_cursor"]
    refusal(api.req("GET", f"/v1/interrupts?status=open&cursor={page['next_cursor']}"), 400, param="cursor")
    for query, param in (("status=closed", "status"), ("older_than=-1", "older_than"),
                         ("approver=you", "approver"), ("expiring_within=x", "expiring_within")):
        refusal(api.req("GET", f"/v1/interrupts?{query}"), 400, code="validation_error", param=param)


def test_a5_a_reminder_and_an_escalation_reach_a_signed_webhook_once(api: Api, stack: Any, worker: Any) -> None:
    from tests.e2e.test_notify_e2e import Receiver

    hook = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    try:
        declare_agent(api, worker[0], interrupt_remind_after=[1], interrupt_escalate_after=2,
                      approval={"escalate_to": BOSS},
                      notify=[{"url": hook.url, "secret": "env:HOLDPOINT_E2E_WORKER_SECRET",
                               "events": ["interrupt.reminded", "interrupt.escalated"]}])
        sid = api.start()
        iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
        wait_for(lambda: hook.of("interrupt.reminded") and hook.of("interrupt.escalated"), "both webhooks", 60)
        [reminded], [escalated] = hook.of("interrupt.reminded"), hook.of("interrupt.escalated")
        assert reminded["signed"] and escalated["signed"]
        assert (reminded["body"]["interrupt_id"], reminded["body"]["reminder"]) == (iid, 1)
        assert escalated["body"]["escalate_to"] == BOSS and set(escalated["body"]["links"]) == {"approve", "deny"}
    finally:
        hook.server.shutdown()
