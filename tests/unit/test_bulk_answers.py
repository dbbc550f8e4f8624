"""Bulk answers (PROTOCOL.md, "Answering several interrupts at once"): each item is the single
resume (`services.resume.resume`), so each is checked and recorded on its own; a refusal is that
item's alone; a malformed list records nothing; a repeat is a set of no-ops (A4); AWS refusing for
load stops the list, and the resend completes it. On the in-memory store, then both functions'
handlers on moto."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.core.errors import Refusal
from holdpoint.ports import Throttled, Unavailable
from holdpoint.services.bulk import MAX_ITEMS, RESERVE_SECS, Item, Outcome, resume_all
from tests.harness import Harness
from tests.unit.test_api import API, CONTEXT, RESUME, http_event, parse, start_session

APPROVE = {"approved": True}


def parked(h: Harness, count: int) -> list[tuple[str, str, str]]:
    """`count` sessions of `h`'s tenant, each parked on its `send_email` interrupt:
    (session id, interrupt id, action fingerprint)."""
    out = []
    for _ in range(count):
        h.session_id = None
        h.say("Email Bob")
        found = h.open_interrupt()
        out.append((h.session_id or "", found["interrupt_id"], found["action"]["fingerprint"]))
    return out


def items_of(rows: list[tuple[str, str, str]], **fields: Any) -> list[Item]:
    return [Item(sid, iid, APPROVE, expect_fingerprint=fp, **fields) for sid, iid, fp in rows]


def status_of(h: Harness, sid: str, iid: str) -> str:
    found = h.store.read_interrupt(h.caller.tenant, sid, iid)
    assert found is not None
    return found.status


@pytest.mark.usefixtures("memory")
def test_bulk_answers_each_item_as_its_own_resume_recorded_in_the_audit() -> None:
    h = Harness()
    rows = parked(h, 3)
    outcomes = resume_all(h.store, h.parking, h.caller, items_of(rows, comment="batch"))
    assert [o.resumed and (o.resumed.noop, o.resumed.decided) for o in outcomes] == [(False, True)] * 3
    for sid, iid, _ in rows:
        found = h.store.read_interrupt(h.caller.tenant, sid, iid)
        assert found is not None and found.status == "resolved" and found.resolution == APPROVE
        assert found.responder is not None and found.responder.subject == h.caller.subject
        assert [a.comment for a in found.approvals] == ["batch"]  # one answer each, with its own entry
        h.session_id = sid
        h.wake(iid, "resumed")  # the release each item made reaches the worker
    assert len(h.triggers("interrupt.resumed")) == 3


@pytest.mark.usefixtures("memory")
def test_bulk_one_refusal_changes_nothing_for_the_others() -> None:
    """A3 on one item (its action's fingerprint is not the one sent): 409 `stale_approval` for it
    alone; the items before and after it are answered."""
    h = Harness()
    rows = parked(h, 3)
    items = items_of(rows)
    items[1] = Item(rows[1][0], rows[1][1], APPROVE, expect_fingerprint="sha256:" + "0" * 64)
    outcomes = resume_all(h.store, h.parking, h.caller, items)
    failed = outcomes[1].failed
    assert isinstance(failed, Refusal) and failed.code == "stale_approval" and failed.param == "expect_fingerprint"
    assert outcomes[0].resumed is not None and outcomes[2].resumed is not None
    assert [status_of(h, sid, iid) for sid, iid, _ in rows] == ["resolved", "open", "resolved"]


@pytest.mark.usefixtures("memory")
def test_bulk_an_item_past_its_deadline_is_410_and_the_others_are_answered() -> None:
    """R16 on one item: one raised while the agent's interrupts expired after 60 s, the other once
    it was declared without expiry; an hour on, the expiring one is refused (`interrupt_expired`,
    nothing recorded) and the other answered."""
    import time

    first = parked(Harness(agent={"interrupt_expires_in": 60}), 1)  # raised before the agent is declared again
    lasting = Harness()
    rows = [*first, *parked(lasting, 1)]
    outcomes = resume_all(lasting.store, lasting.parking, lasting.caller, items_of(rows),
                          clock=lambda: time.time() + 3600)
    failed = outcomes[0].failed
    assert isinstance(failed, Refusal) and failed.code == "interrupt_expired"
    assert outcomes[1].resumed is not None and not outcomes[1].resumed.noop
    assert [status_of(lasting, sid, iid) for sid, iid, _ in rows] == ["open", "resolved"]


@pytest.mark.usefixtures("memory")
def test_bulk_repeated_is_a_set_of_noops_each_saying_who_answered() -> None:
    h = Harness()
    rows = parked(h, 2)
    resume_all(h.store, h.parking, h.caller, items_of(rows))
    again = resume_all(h.store, h.parking, h.caller, items_of(rows))
    for out in again:
        assert out.resumed is not None and out.resumed.noop and out.resumed.cleared is not None
        assert out.resumed.cleared.same_payload and out.resumed.cleared.subject == h.caller.subject


@pytest.mark.usefixtures("memory")
@pytest.mark.parametrize(("count", "duplicate", "param"), [(0, False, "items"), (MAX_ITEMS + 1, False, "items"),
                                                           (3, True, "items[2].interrupt_id")])
def test_bulk_a_malformed_list_is_refused_whole_and_records_nothing(count: int, duplicate: bool, param: str) -> None:
    h = Harness()
    rows = parked(h, 2)
    items = (items_of(rows) * MAX_ITEMS)[:count] if not duplicate else [*items_of(rows), items_of(rows)[0]]
    with pytest.raises(Refusal) as refused:
        resume_all(h.store, h.parking, h.caller, items)
    assert refused.value.code == "validation_error" and refused.value.param == param
    assert [status_of(h, sid, iid) for sid, iid, _ in rows] == ["open", "open"]


class ThrottledAfter:
    """The store, except that AWS throttles every resolve after the first `allowed`."""

    def __init__(self, store: Any, allowed: int) -> None:
        self.store, self.allowed = store, allowed

    def resolve_interrupt(self, *args: Any, **kw: Any) -> Any:
        if self.allowed <= 0:
            raise Throttled("ProvisionedThroughputExceededException")
        self.allowed -= 1
        return self.store.resolve_interrupt(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.usefixtures("memory")
def test_bulk_a_throttle_mid_list_stops_it_there_and_the_resend_completes_it() -> None:
    h = Harness()
    rows = parked(h, 4)
    outcomes = resume_all(ThrottledAfter(h.store, 2), h.parking, h.caller, items_of(rows))
    assert [o.resumed is not None for o in outcomes] == [True, True, False, False]
    assert all(isinstance(o.failed, Throttled) for o in outcomes[2:])
    assert [status_of(h, sid, iid) for sid, iid, _ in rows] == ["resolved", "resolved", "open", "open"]
    again = resume_all(h.store, h.parking, h.caller, items_of(rows))
    assert [o.resumed and o.resumed.noop for o in again] == [True, True, False, False]


@pytest.mark.usefixtures("memory")
def test_bulk_a_function_running_out_of_time_stops_the_list_before_the_next_item() -> None:
    h = Harness()
    rows = parked(h, 3)
    left = iter([RESERVE_SECS + 5, RESERVE_SECS - 1])
    outcomes = resume_all(h.store, h.parking, h.caller, items_of(rows), time_left=lambda: next(left))
    assert outcomes[0].resumed is not None and all(isinstance(o.failed, Unavailable) for o in outcomes[1:])
    assert [status_of(h, sid, iid) for sid, iid, _ in rows] == ["resolved", "open", "open"]


def test_bulk_outcomes_render_as_single_resumes_with_their_status() -> None:
    from holdpoint.http.rendering import bulk_answered
    from holdpoint.services.resume import Progress, Resumed

    item = Item("s1", "i1")
    body = bulk_answered([Outcome(item, resumed=Resumed("i1", noop=False)),
                          Outcome(Item("s1", "i2"), failed=Refusal("not_found", "session s1 not found")),
                          Outcome(Item("s1", "i3"), failed=Throttled()),
                          Outcome(Item("s2", "i4"), resumed=Resumed("i4", noop=False, progress=Progress(1, 2)))])
    assert body["results"][0] == {"session_id": "s1", "interrupt_id": "i1", "http_status": 200, "ok": True,
                                  "noop": False}
    assert body["results"][1]["http_status"] == 404 and body["results"][1]["error"]["code"] == "not_found"
    assert body["results"][2]["http_status"] == 503 and body["results"][2]["error"]["code"] == "throttled"
    quorum = body["results"][3]  # one answer of two recorded: the single resume's `status: open`, beside its 200
    assert (quorum["http_status"], quorum["status"], quorum["approvals"], quorum["quorum"]) == (200, "open", 1, 2)
    assert body["counts"] == {"answered": 2, "noop": 0, "refused": 2}


# --- over both functions' handlers (the API function declares the route, the resume function serves it)


@pytest.fixture
def handlers(aws: dict[str, str]) -> Iterator[None]:
    assembly.reset()
    yield
    assembly.reset()


def bulk(handler: Any, body: Any = None, raw: str | None = None) -> tuple[int, Any]:
    event = http_event("POST", "/v1/interrupts/resume", body, raw_body=raw, route_key="POST /v1/interrupts/resume",
                       tenant="dev")
    return parse(handler.handler(event, CONTEXT))


MALFORMED = [None, "[]", "{}", '{"items": null}', '{"items": 1}', '{"items": []}', '{"items": [1]}',
             '{"items": [{}]}', '{"items": [{"session_id": 1, "x": 2}]}', '{"items": [{"session_id": "a"}]}',
             '{"items": [{"session_id": "-a", "interrupt_id": "b"}]}',
             '{"items": [{"session_id": "a", "interrupt_id": "b", "comment": "' + "c" * 2001 + '"}]}',
             '{"items": [{"session_id": "a", "interrupt_id": "b", "expect_fingerprint": 3}]}',
             '{"items": [{"session_id": "a", "interrupt_id": "b", "Payload": 1}]}',
             '{"items": [{"session_id": "a", "interrupt_id": "b"}], "z": 1}', '{"z": 1, "items": 3}',
             '{"items": [' + ", ".join(['{"session_id": "a", "interrupt_id": "b"}'] * (MAX_ITEMS + 1)) + "]}",
             '{"items": [{"session_id": "a", "interrupt_id": "b"}, {"session_id": "a", "interrupt_id": "b"}]}']


def test_bulk_the_resume_function_answers_malformed_lists_as_the_api_function_does(handlers: None) -> None:
    """The resume function checks the body against `resume_shape.py` (made from `BulkResumeBody`)
    without pydantic; every malformed list gets the API function's 400, naming the same field."""
    for raw in MALFORMED:
        api, resume = bulk(API, raw=raw), bulk(RESUME, raw=raw)
        assert api == resume, raw
        assert api[0] == 400 and api[1]["error"]["code"] == "validation_error", (raw, api)


def test_bulk_route_answers_each_item_over_both_functions(handlers: None) -> None:
    h = Harness(tenant="dev")
    rows = []
    for _ in range(3):
        sid = start_session(h)
        found = h.open_interrupt()
        rows.append({"session_id": sid, "interrupt_id": found["interrupt_id"], "payload": APPROVE,
                     "expect_fingerprint": found["action"]["fingerprint"]})
    unknown = {"session_id": "nope", "interrupt_id": "x"}
    status, body = bulk(RESUME, {"items": [*rows[:2], unknown]})
    assert status == 200, body
    assert [r["http_status"] for r in body["results"]] == [200, 200, 404]
    assert body["counts"] == {"answered": 2, "noop": 0, "refused": 1}
    status, body = bulk(API, {"items": rows})  # the API function's declaration serves the same request
    assert status == 200 and [r.get("noop") for r in body["results"]] == [True, True, False]
    big = {"items": [{**rows[0], "payload": {"text": "x" * 140_000}}]}
    status, body = bulk(RESUME, big)
    assert (status, body["error"]["param"]) == (413, "items[0].payload")
