"""R13 and R7 for the task token that holds a parked branch: the `park` message stores it with one
conditional UpdateItem of the interrupt item (no load, no header write, no transaction), a repeat
writes nothing, and a token that lands once the interrupt is no longer open ends its execution.
Over HTTP on the local stack: tests/e2e/test_park_token_e2e.py (and test_races.py for the resume
racing the token)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from holdpoint.aws import signing
from holdpoint.aws.parking import Parking
from holdpoint.aws.store import Conflict, Store
from holdpoint.core.messages import parse as work_message
from holdpoint.services import inbox as inbox_service
from holdpoint.services.inbox import InboxFilters
from holdpoint.services.resume import resume
from tests.harness import Harness, seed_worker

pytestmark = pytest.mark.usefixtures("aws")


@contextmanager
def dynamodb_requests(store: Store) -> Iterator[list[str]]:
    """The DynamoDB operations `store` sends inside the block, by name."""
    ops: list[str] = []

    def record(model: Any, **_: Any) -> None:
        ops.append(model.name)

    events = store.client.meta.events
    events.register("before-call.dynamodb", record, unique_id="park-token-test")
    try:
        yield ops
    finally:
        events.unregister("before-call.dynamodb", unique_id="park-token-test")


@pytest.fixture
def completed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every SendTaskSuccess any Parking sends (token, output)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    real = Parking.complete

    def spy(self: Parking, token: str, output: dict[str, Any]) -> bool:
        calls.append((token, output))
        return real(self, token, output)

    monkeypatch.setattr(Parking, "complete", spy)
    return calls


def park(h: Harness, interrupt_id: str, token: str) -> None:
    h.runner.handle(work_message({"kind": "park", "tenant": h.caller.tenant, "session_id": h.session_id,
                     "interrupt_id": interrupt_id, "task_token": token}))


def raw_item(h: Harness, interrupt_id: str) -> dict[str, Any] | None:
    got = boto3.client("dynamodb").get_item(TableName="holdpoint", Key={
        "PK": {"S": f"T#{h.caller.tenant}#S#{h.session_id}"}, "SK": {"S": f"I#{interrupt_id}"}})
    item: dict[str, Any] | None = got.get("Item")
    return item


def parked() -> tuple[Harness, str]:
    """A session parked on the seed's `confirm` interrupt, its execution started, no token yet."""
    h = Harness()
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    boto3.client("dynamodb").update_item(  # undo the harness's own park message
        TableName="holdpoint", Key={"PK": {"S": f"T#{h.caller.tenant}#S#{h.session_id}"}, "SK": {"S": f"I#{iid}"}},
        UpdateExpression="REMOVE parking_key")
    assert h.state().interrupts[iid].parking_key is None
    return h, iid


def test_r13_the_park_message_stores_the_token_with_one_conditional_update_and_no_header_write(
        completed: list[Any]) -> None:
    h, iid = parked()
    before = h.state()
    rev_before = int((raw_item(h, iid) or {})["rev"]["N"])
    with dynamodb_requests(h.store) as ops:
        park(h, iid, "token-1")
    assert ops == ["UpdateItem"]  # no load, no Query, no TransactWriteItems
    after = h.state()
    assert after.interrupts[iid].parking_key == "token-1"
    assert after.header.version == before.header.version  # the header is not written
    assert after.tree.nodes.keys() == before.tree.nodes.keys() and after.calls == before.calls
    assert completed == []  # open: nothing to end
    item = raw_item(h, iid)
    assert item is not None and item["parking_key"] == {"S": "token-1"}
    assert int(item["rev"]["N"]) == rev_before + 1
    assert "parking_key" not in item["body"]["S"]  # one place for it: the attribute the update sets


def test_r13_a_redelivered_park_message_writes_nothing(completed: list[Any]) -> None:
    h, iid = parked()
    park(h, iid, "token-1")
    stored = raw_item(h, iid)
    with dynamodb_requests(h.store) as ops:
        park(h, iid, "token-1")
        park(h, iid, "token-1")
    assert ops == ["UpdateItem", "UpdateItem"]  # each refused by its condition
    assert raw_item(h, iid) == stored
    assert completed == []


def test_r13_a_park_message_for_an_unknown_interrupt_or_session_creates_nothing(completed: list[Any]) -> None:
    h, _ = parked()
    version = h.state().header.version
    park(h, "int-unknown", "token-x")
    h.runner.handle(work_message({"kind": "park", "tenant": h.caller.tenant, "session_id": "ses-unknown",
                     "interrupt_id": "int-unknown", "task_token": "token-y"}))
    assert raw_item(h, "int-unknown") is None
    items = boto3.client("dynamodb").scan(TableName="holdpoint")["Items"]
    assert not [i for i in items if "ses-unknown" in i["PK"]["S"]]
    assert h.state().header.version == version and completed == []


def test_r13_an_engine_commit_that_read_the_interrupt_before_the_token_conflicts_and_keeps_it() -> None:
    h, iid = parked()
    stale = h.state()
    park(h, iid, "token-1")
    stale.interrupts[iid].reminded = [0]  # any rewrite of the item read before the token landed
    stale.touch(stale.interrupts[iid])
    with pytest.raises(Conflict):
        h.store.commit(stale)
    assert h.state().interrupts[iid].parking_key == "token-1"


def test_r13_later_rewrites_of_the_interrupt_keep_the_token() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    token = h.state().interrupts[iid].parking_key
    assert token
    h.resume(iid, {"approved": True})  # the wake commit rewrites the interrupt (woken)
    interrupt = h.state().interrupts[iid]
    assert interrupt.woken and interrupt.parking_key == token
    assert [r["trigger"]["type"] for r in log].count("interrupt.resumed") == 1


def test_r7_a_token_landing_after_the_resume_ends_its_execution(completed: list[Any]) -> None:
    h, iid = parked()
    answer = resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    assert answer.noop is False and completed == []  # no token yet: nothing for the resume to end
    park(h, iid, "late-token")
    assert completed == [("late-token", {"interrupt_id": iid})]
    assert h.state().interrupts[iid].parking_key == "late-token"
    park(h, iid, "late-token")  # redelivered, e.g. after a crash before SendTaskSuccess: sent again
    assert [t for t, _ in completed] == ["late-token", "late-token"]  # a spent token is a no-op to AWS


def test_r7_a_token_landing_after_the_interrupt_woke_still_ends_its_execution(completed: list[Any]) -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    h.resume(iid, {"approved": True})
    assert h.state().interrupts[iid].woken
    completed.clear()
    park(h, iid, "another-token")  # e.g. the wake came from the resume before the token arrived
    assert completed == [("another-token", {"interrupt_id": iid})]
    assert [r["trigger"]["type"] for r in log].count("interrupt.resumed") == 1  # nothing woke twice


def test_a6_the_inbox_lists_an_interrupt_with_its_token_stored_and_shows_no_token() -> None:
    h, iid = parked()
    park(h, iid, "token-secret-1")
    page = inbox_service.inbox(h.store, signing, h.caller, 50, None, InboxFilters())
    [row] = [i for i in page["interrupts"] if i["interrupt_id"] == iid]
    assert row["status"] == "open"
    assert "token-secret-1" not in repr(page)


def test_r13_an_item_that_keeps_the_token_in_its_body_is_still_read_and_moved_on_rewrite() -> None:
    h, iid = parked()
    item = raw_item(h, iid)
    assert item is not None
    body = json.loads(item["body"]["S"])
    item["body"] = {"S": json.dumps({**body, "parking_key": "token-in-body"})}  # as items were written before
    boto3.client("dynamodb").put_item(TableName="holdpoint", Item=item)
    assert h.state().interrupts[iid].parking_key == "token-in-body"
    h.resume(iid, {"approved": True})  # the wake rewrites the item
    rewritten = raw_item(h, iid)
    assert rewritten is not None and rewritten["parking_key"] == {"S": "token-in-body"}
    assert "parking_key" not in json.loads(rewritten["body"]["S"])
