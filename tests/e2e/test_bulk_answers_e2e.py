"""Bulk answers over HTTP on the local stack (PROTOCOL.md §5.2.1): one `POST /v1/interrupts/resume`
of 50 items, served by the resume function, answers each interrupt as its own resume: the one
whose action's fingerprint is not the one sent is refused alone, the 49 others are recorded in the
audit, released through Step Functions and reach the worker; the same request again is 50 no-ops
or the same refusal."""

from __future__ import annotations

import time
from typing import Any

from tests.stack import Api, resumed_triggers
from tests.waiting import wait_for

COUNT = 50
STALE = "sha256:" + "0" * 64


def park_many(api: Api, count: int) -> list[dict[str, Any]]:
    """`count` sessions, each parked on its `send_email` interrupt: one bulk item each, with the
    action's fingerprint as the listing shows it."""
    sids = [api.start() for _ in range(count)]
    items = []
    for sid in sids:
        [interrupt] = api.wait_status(sid, "interrupted", timeout=120)["interrupts"]
        items.append({"session_id": sid, "interrupt_id": interrupt["interrupt_id"], "payload": {"approved": True},
                      "expect_fingerprint": interrupt["action"]["fingerprint"], "comment": "bulk"})
    return items


def test_bulk_answer_of_50_records_each_refuses_one_and_wakes_49_over_http(api: Api, stack: Any,
                                                                           worker: Any) -> None:
    items = park_many(api, COUNT)
    items[17] = {**items[17], "expect_fingerprint": STALE}  # the action changed since it was listed (A3)
    started = time.monotonic()
    resp = api.req("POST", "/v1/interrupts/resume", {"items": items})
    took = time.monotonic() - started
    assert resp.status_code == 200, resp.text[:300]
    body = resp.json()
    assert body["counts"] == {"answered": COUNT - 1, "noop": 0, "refused": 1}, (body["counts"], took)
    refused = body["results"][17]
    assert (refused["http_status"], refused["error"]["code"], refused["error"]["param"]) == (
        409, "stale_approval", "expect_fingerprint")
    assert [r["session_id"] for r in body["results"]] == [i["session_id"] for i in items]
    answered = [i for n, i in enumerate(items) if n != 17]
    for item in answered:  # each released: its branch wakes, the worker sends the email
        sid = item["session_id"]
        assert api.wait_status(sid, "done", timeout=120)["messages"][-1]["content"] == "Email sent."
        assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": True}]
    stale = api.view(items[17]["session_id"])
    assert stale["status"] == "interrupted" and resumed_triggers(worker[1], items[17]["session_id"]) == []

    closed = api.ok("GET", "/v1/interrupts?status=resolved&limit=100")["interrupts"]
    ours = {i["session_id"]: i for i in closed if i["session_id"] in {a["session_id"] for a in answered}}
    assert len(ours) == COUNT - 1  # one audit entry per item, each its own answer
    assert all([a["comment"] for a in i["approvals"]] == ["bulk"] for i in ours.values())

    again = api.ok("POST", "/v1/interrupts/resume", {"items": items})  # A4: a set of no-ops
    assert again["counts"] == {"answered": 0, "noop": COUNT - 1, "refused": 1}
    assert all(r["resolved"]["same_payload"] for n, r in enumerate(again["results"]) if n != 17)

    fixed = {**items[17], "expect_fingerprint": api.view(items[17]["session_id"])["interrupts"][0]["action"][
        "fingerprint"]}
    assert api.ok("POST", "/v1/interrupts/resume", {"items": [fixed]})["counts"]["answered"] == 1
    wait_for(lambda: resumed_triggers(worker[1], fixed["session_id"]), "the last item's wake", 120)
    print(f"\nbulk answer of {COUNT} items on the local stack: {took:.2f} s")
