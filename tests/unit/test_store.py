"""Conditional writes make replays, duplicates and crashes no-ops (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.store import Conflict
from tests.harness import Harness, seed_worker

pytestmark = pytest.mark.usefixtures("aws")


def test_a_stale_commit_conflicts_and_writes_nothing() -> None:
    h = Harness()
    h.say("Email Bob")
    first, second = h.state(), h.state()
    first.emit("test.marker")
    h.store.commit(first)
    second.emit("test.marker")
    with pytest.raises(Conflict):
        h.store.commit(second)
    assert len(h.events("test.marker")) == 1


def test_redelivered_wake_and_park_messages_do_nothing_twice() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    token = h.token(iid)
    h.runner.handle(work_message({"kind": "park", "tenant": "t1", "session_id": h.session_id, "interrupt_id": iid,
                     "task_token": token}))
    h.resume(iid, {"approved": True})
    version = h.state().header.version
    for _ in range(3):
        h.wake(iid, "resumed")
        h.wake(iid, "expired")
    assert h.state().header.version == version
    assert len([r for r in log if r["trigger"]["type"] == "interrupt.resumed"]) == 1


def test_engine_dying_before_start_execution_still_ends_with_one_execution(aws: dict[str, str]) -> None:
    h = Harness()
    h.say("Email Bob")
    state = h.state()
    [interrupt] = state.open_interrupts()
    # The engine died after StartExecution but before recording it: the retried step starts
    # the same execution again (named by the interrupt) and gets the same ARN back.
    again = h.parking.start("t1", h.session_id or "", interrupt)
    assert again == h.record(interrupt.interrupt_id).handle  # type: ignore[union-attr]
    executions = boto3.client("stepfunctions").list_executions(
        stateMachineArn=aws["PARK_STATE_MACHINE_ARN"])["executions"]
    assert len(executions) == 1


def test_a_tool_result_over_the_item_limit_is_stored_in_s3_by_reference() -> None:
    big = "x" * 1_500_000  # 1.5 MB: far over DynamoDB's 400 KB item

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        if req["trigger"]["type"] == "tool.execute":
            return {"actions": [{"type": "tool.result", "result": big}]}
        return req["proposed"]

    h = Harness(decide)
    h.say("Email Bob")
    view = h.view()
    assert view["status"] == "done"
    assert [m for m in view["messages"] if m["role"] == "tool"][0]["content"] == big
    refs = [i for i in boto3.client("dynamodb").scan(TableName="holdpoint")["Items"] if "body_ref" in i]
    assert refs  # the node, the call and the tool.finished decision went by reference
    assert boto3.client("s3").list_objects_v2(Bucket="holdpoint-payloads")["KeyCount"] >= len(refs)


def test_head_only_load_reads_header_agent_and_interrupts_but_no_tree() -> None:
    h = Harness()
    h.say("Email Bob")
    full, head = h.state(), h.store.load("t1", h.session_id or "", head_only=True)
    assert head is not None and head.header == full.header
    assert set(head.interrupts) == set(full.interrupts) and head.interrupts
    assert not head.tree.nodes and not head.calls and not head.decisions and not head.turns
    assert full.tree.nodes and full.calls and full.decisions


def test_an_interrupt_item_stores_each_field_once_and_loads_whole() -> None:
    """The interrupt's answer and the fields the conditional writes and indexes read live as the
    item's top-level attributes alone (DynamoDB bills each write per started KB); the header's body
    leaves out its keys and unset fields. Both load back whole."""
    h = Harness(seed_worker())
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    h.resume(iid, {"approved": True})
    before = h.state().interrupts[iid]
    items = {i["SK"]["S"]: i for i in boto3.client("dynamodb").scan(TableName="holdpoint")["Items"]
             if i["PK"]["S"].endswith(h.session_id or "")}
    item = items[f"I#{iid}"]
    body = json.loads(item["body"]["S"])
    on_top = {"interrupt_id", "status", "origin", "generation", "owner", "reason", "resolution", "responder",
              "resolved_at"}
    assert not on_top & set(body) and item["resolution"] and item["status"]["S"] == "resolved"
    header = json.loads(items["H"]["body"]["S"])
    assert not {"tenant", "session_id", "state", "parent", "budget"} & set(header)
    state = h.state()
    assert state.interrupts[iid] == before and before.resolution == {"approved": True}
    assert (state.header.tenant, state.header.session_id) == ("t1", h.session_id)


# --- the event log: one item per commit (bench/README.md, (a)) ----------------------------------


def _log_items(h: Harness) -> list[dict[str, Any]]:
    from holdpoint.aws.store import session_pk

    pk = session_pk(h.caller.tenant, h.session_id or "")
    return boto3.client("dynamodb").query(
        TableName="holdpoint", KeyConditionExpression="PK = :p AND begins_with(SK, :e)",
        ExpressionAttributeValues={":p": {"S": pk}, ":e": {"S": "E#"}})["Items"]


def _items(h: Harness, prefix: str) -> list[dict[str, Any]]:
    pk = f"T#t1#S#{h.session_id}"
    return boto3.client("dynamodb").query(  # type: ignore[no-any-return]
        TableName="holdpoint", KeyConditionExpression="PK = :p AND begins_with(SK, :q)",
        ExpressionAttributeValues={":p": {"S": pk}, ":q": {"S": prefix}})["Items"]


def test_a_decision_the_worker_answers_in_order_is_written_once() -> None:
    """The commit of the worker's answer leaves the decision's item as queued (pending, revision 1)
    while the header's `done_through` covers its order: a cold and a warm load both read it as
    answered by the worker, one attempt. Only a decision written answered from the start (the
    wake's `interrupt.resumed`, queued and delivered in one commit) is stored so."""
    from holdpoint.aws.store import Store

    h = Harness()
    h.say("say hi")
    h.say("Email Bob")
    items = _items(h, "Q#")
    assert items and all(item["rev"]["N"] == "1" and item["status"]["S"] == "pending" for item in items)
    [header] = _items(h, "H")[:1]
    for state in (h.state(), Store(cache=False).load("t1", h.session_id or "")):
        assert state is not None
        assert int(header["done_through"]["N"]) >= max(d.order for d in state.decisions.values())
        assert {(d.status, d.via, d.attempts) for d in state.decisions.values()} == {("delivered", "worker", 1)}


def test_event_log_writes_one_item_per_commit() -> None:
    h = Harness()
    h.say("Email Bob")
    before = _log_items(h)
    state = h.state()
    for i in range(3):
        state.emit("test.marker", i=i)
    h.store.commit(state)
    [item] = [i for i in _log_items(h) if i not in before]
    assert item["SK"]["S"] == f"E#{state.header.seq:012d}"  # keyed by the last seq it holds
    assert [e["data"]["i"] for e in json.loads(item["body"]["S"])] == [0, 1, 2]
    assert len(before) < len(h.events())  # every earlier commit's events are one item too


def test_event_log_reads_an_item_of_one_event_alone() -> None:
    """An event-log item whose body is one event (not a list) reads as that event."""
    h = Harness()
    h.say("Email Bob")
    seq = h.state().header.seq + 1
    item = _log_items(h)[0]
    event = {"seq": seq, "type": "test.single", "at": "2024-01-01T00:00:00.000Z", "data": {}}
    boto3.client("dynamodb").put_item(TableName="holdpoint", Item={
        "PK": item["PK"], "SK": {"S": f"E#{seq:012d}"}, "etype": {"S": "test.single"},
        "body": {"S": json.dumps(event)}})
    assert [e.wire() for e in h.store.events(h.caller.tenant, h.session_id or "", seq - 1, 10)] == [event]
    assert h.events()[-1] == event


def test_event_log_an_item_with_a_streamed_event_passes_the_outbox_filter() -> None:
    """The stream filter reads one `etype` an item: the item's first streamed event's, so an item
    whose streamed event is not its first still reaches the notifier, and only that event does."""
    from pathlib import Path

    from holdpoint.aws.outbox import events as outbox_events
    from holdpoint_local.emulators.streams import matches
    from holdpoint_local.provision import load_template

    h = Harness()
    h.say("Email Bob")
    state = h.state()
    state.emit("test.marker")
    state.emit("interrupt.reminded", interrupt_id="int_x")
    h.store.commit(state)
    item = max(_log_items(h), key=lambda i: i["SK"]["S"])
    template = load_template(Path(__file__).resolve().parents[2] / "template.yaml")
    filters = template["Resources"]["NotifierFunction"]["Properties"]["Events"]["Outbox"]["Properties"][
        "FilterCriteria"]["Filters"]
    record = {"eventName": "INSERT", "dynamodb": {"NewImage": item, "SequenceNumber": "1"}}
    assert any(matches(json.loads(f["Pattern"]), record) for f in filters)
    assert [e.event["type"] for e in outbox_events({"Records": [record]}, h.store)] == ["interrupt.reminded"]


def test_event_log_a_commit_of_events_over_the_item_limit_goes_to_s3() -> None:
    h = Harness()
    h.say("Email Bob")
    state = h.state()
    for i in range(4):
        state.emit("test.marker", text=f"{i}" * 100_000)  # 400 KB together: over one item
    h.store.commit(state)
    item = max(_log_items(h), key=lambda i: i["SK"]["S"])
    assert "body_ref" in item
    assert [e["data"]["text"][0] for e in h.events("test.marker")] == ["0", "1", "2", "3"]
