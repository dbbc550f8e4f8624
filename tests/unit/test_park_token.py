"""R13 and R7 for the task token that holds a parked branch: the `park` message stores it on the
raise's park record (the parking's own item, aws/ddb/parking.py) with one conditional UpdateItem
(no load, no header write, no transaction, the interrupt item untouched), a repeat writes nothing,
and a token that lands once the interrupt is no longer open ends its execution.
Over HTTP on the local stack: tests/e2e/test_park_token_e2e.py (and test_races.py for the resume
racing the token)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from holdpoint.aws import signing
from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.services import inbox as inbox_service
from holdpoint.services.inbox import InboxFilters
from holdpoint.services.resume import resume
from tests.harness import Harness, seed_worker

pytestmark = pytest.mark.usefixtures("aws")


@contextmanager
def dynamodb_requests(h: Harness) -> Iterator[list[str]]:
    """The DynamoDB operations the harness's store and parking send inside the block, by name."""
    ops: list[str] = []

    def record(model: Any, **_: Any) -> None:
        ops.append(model.name)

    clients = {id(c): c for c in (h.store.client, h.parking.records.table.client)}.values()
    for client in clients:
        client.meta.events.register("before-call.dynamodb", record, unique_id="park-token-test")
    try:
        yield ops
    finally:
        for client in clients:
            client.meta.events.unregister("before-call.dynamodb", unique_id="park-token-test")


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


def park(h: Harness, interrupt_id: str, token: str, generation: int | None = None) -> None:
    """ParkBranch's park message for the raise `generation` (by default the one open now, as the
    execution started for it sends)."""
    if generation is None and h.session_id and interrupt_id in h.state().interrupts:
        generation = h.state().interrupts[interrupt_id].generation
    h.runner.handle(work_message({"kind": "park", "tenant": h.caller.tenant, "session_id": h.session_id,
                     "interrupt_id": interrupt_id, "task_token": token, "generation": generation}))


def raw_item(h: Harness, interrupt_id: str) -> dict[str, Any] | None:
    got = boto3.client("dynamodb").get_item(TableName="holdpoint", Key={
        "PK": {"S": f"T#{h.caller.tenant}#S#{h.session_id}"}, "SK": {"S": f"I#{interrupt_id}"}})
    item: dict[str, Any] | None = got.get("Item")
    return item


def token_item(h: Harness, interrupt_id: str) -> dict[str, Any] | None:
    """The park record of the interrupt's raise now open (of generation 0 if none is), as DynamoDB holds it."""
    interrupt = h.store.read_interrupt(h.caller.tenant, h.session_id or "", interrupt_id)
    generation = interrupt.generation if interrupt is not None else 0
    got = boto3.client("dynamodb").get_item(TableName="holdpoint", Key={
        "PK": {"S": f"T#{h.caller.tenant}#S#{h.session_id}"}, "SK": {"S": f"G#{interrupt_id}#{generation}"}})
    item: dict[str, Any] | None = got.get("Item")
    return item


def stored_token(h: Harness, interrupt_id: str) -> str | None:
    return h.token(interrupt_id)


def parked() -> tuple[Harness, str]:
    """A session parked on the seed's `confirm` interrupt, its execution started, no token yet."""
    h = Harness()
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    generation = h.state().interrupts[iid].generation
    boto3.client("dynamodb").update_item(  # undo the harness's own park message
        TableName="holdpoint", UpdateExpression="REMOVE task_token", Key={
            "PK": {"S": f"T#{h.caller.tenant}#S#{h.session_id}"}, "SK": {"S": f"G#{iid}#{generation}"}})
    assert stored_token(h, iid) is None
    return h, iid


def test_r13_the_park_message_stores_the_token_in_its_own_item_and_leaves_the_interrupt_alone(
        completed: list[Any]) -> None:
    h, iid = parked()
    before, interrupt_before = h.state(), raw_item(h, iid)
    with dynamodb_requests(h) as ops:
        park(h, iid, "token-1", before.interrupts[iid].generation)
    assert ops == ["UpdateItem", "GetItem"]  # no load, no Query, no TransactWriteItems
    after = h.state()
    assert stored_token(h, iid) == "token-1"
    assert "token-1" not in repr(after.interrupts[iid])  # a load does not read it
    assert after.header.version == before.header.version  # the header is not written
    assert after.tree.nodes.keys() == before.tree.nodes.keys() and after.calls == before.calls
    assert completed == []  # open: nothing to end
    assert raw_item(h, iid) == interrupt_before  # nor the interrupt (nor its Inbox entry)
    item = token_item(h, iid)
    assert item is not None and item["task_token"] == {"S": "token-1"} and "ttl" in item
    assert item["execution"]["S"].endswith(after.interrupts[iid].dedup_key)


def test_r13_a_redelivered_park_message_writes_nothing(completed: list[Any]) -> None:
    h, iid = parked()
    park(h, iid, "token-1")
    stored = token_item(h, iid)
    generation = h.state().interrupts[iid].generation
    with dynamodb_requests(h) as ops:
        park(h, iid, "token-1", generation)
        park(h, iid, "token-1", generation)
    assert ops == ["UpdateItem", "GetItem"] * 2  # each write refused by its condition
    assert token_item(h, iid) == stored
    assert completed == []


def test_r13_a_park_message_for_an_unknown_interrupt_or_session_creates_nothing(completed: list[Any]) -> None:
    h, _ = parked()
    version = h.state().header.version
    park(h, "int-unknown", "token-x")
    h.runner.handle(work_message({"kind": "park", "tenant": h.caller.tenant, "session_id": "ses-unknown",
                     "interrupt_id": "int-unknown", "task_token": "token-y"}))
    assert raw_item(h, "int-unknown") is None and token_item(h, "int-unknown") is None
    items = boto3.client("dynamodb").scan(TableName="holdpoint")["Items"]
    assert not [i for i in items if "ses-unknown" in i["PK"]["S"]]
    assert h.state().header.version == version and completed == []


def test_r13_an_engine_commit_that_read_the_interrupt_before_the_token_lands_and_keeps_it() -> None:
    h, iid = parked()
    stale = h.state()
    park(h, iid, "token-1")
    stale.interrupts[iid].reminded = [0]  # any rewrite of the item read before the token landed
    stale.touch(stale.interrupts[iid])
    h.store.commit(stale)  # the token moved nothing the commit read
    assert stored_token(h, iid) == "token-1"
    assert "token-1" not in repr(raw_item(h, iid))


def test_r13_later_rewrites_of_the_interrupt_keep_the_token() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    token = stored_token(h, iid)
    assert token
    h.resume(iid, {"approved": True})  # the wake commit rewrites the interrupt (woken)
    interrupt = h.state().interrupts[iid]
    assert interrupt.woken and stored_token(h, iid) == token  # a retried resume still finds it
    assert token not in repr(raw_item(h, iid))  # the wake's write does not carry it
    assert [r["trigger"]["type"] for r in log].count("interrupt.resumed") == 1


def test_r7_a_token_landing_after_the_resume_ends_its_execution(completed: list[Any]) -> None:
    h, iid = parked()
    answer = resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    assert answer.noop is False and completed == []  # no token yet: nothing for the resume to end
    park(h, iid, "late-token")
    assert completed == [("late-token", {"interrupt_id": iid})]
    assert stored_token(h, iid) == "late-token"
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


def test_r7_a_resume_between_the_token_write_and_its_read_ends_the_execution(
        completed: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The park message stores the token, then reads the interrupt; the resume resolves, then reads
    the token. Whichever order the four land in, one of the two sees the other and ends the execution."""
    h, iid = parked()
    writes = h.store.interrupt_writes
    real = writes.read
    answered: list[Any] = []
    started: list[bool] = []

    def resume_first(tenant: str, session_id: str, interrupt_id: str) -> Any:
        if not started:  # the resume lands after the park's write of the token, before its read
            started.append(True)
            answered.append(resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True}))
            answered.append({"ended_by_the_resume": list(completed)})
        return real(tenant, session_id, interrupt_id)

    monkeypatch.setattr(writes, "read", resume_first)
    park(h, iid, "token-1")
    assert answered[0].noop is False
    assert answered[1]["ended_by_the_resume"] == [("token-1", {"interrupt_id": iid})]  # read after its write
    assert completed == [("token-1", {"interrupt_id": iid})] * 2  # and the park's read saw the resolve
