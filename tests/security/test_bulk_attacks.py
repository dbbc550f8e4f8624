"""Attacks on bulk answers (`POST /v1/interrupts/resume`, PROTOCOL.md §5.2.1), over HTTP on the
local stack: each item meets the single resume's walls on its own, so another tenant's interrupt,
a session an end user does not own, or an interrupt the caller's origin may not clear is refused
for that item alone (the others are answered); a list over the bound or naming an interrupt twice
is refused whole and records nothing; AWS throttling mid-list stops the list there, and the
resend completes it without answering anything twice."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from holdpoint.services.bulk import MAX_ITEMS, resume_all
from tests.harness import Harness
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, resumed_triggers
from tests.unit.test_bulk_answers import ThrottledAfter, items_of, status_of
from tests.unit.test_bulk_answers import parked as parked_in_memory

APPROVE = {"approved": True}


def parked(api: Api) -> dict[str, Any]:
    """A session of `api`'s caller parked on its interrupt, as a bulk item approving it."""
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    return {"session_id": sid, "interrupt_id": interrupt["interrupt_id"], "payload": APPROVE}


def statuses(resp: Any) -> list[int]:
    assert resp.status_code == 200, resp.text[:300]
    return [r["http_status"] for r in resp.json()["results"]]


def test_bulk_another_tenants_interrupt_is_404_for_that_item_alone(api: Api, stack: Any, worker: Any,
                                                                    other_tenant: Api) -> None:
    other_tenant.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": [
        {"when": {"role": "user"}, "reply": {"content": "Hi!"}}]}})
    sid = other_tenant.start("say hi")
    other_tenant.wait_status(sid, "done")
    raised = other_tenant.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "hold"})
    theirs = {"session_id": sid, "interrupt_id": raised["interrupt_id"], "payload": APPROVE}
    mine = [parked(api), parked(api)]
    resp = api.req("POST", "/v1/interrupts/resume", {"items": [mine[0], theirs, mine[1]]})
    assert statuses(resp) == [200, 404, 200]
    assert resp.json()["results"][1]["error"]["code"] == "not_found"
    assert [i["interrupt_id"] for i in other_tenant.view(sid)["interrupts"]] == [theirs["interrupt_id"]]
    for item in mine:
        api.wait_status(item["session_id"], "done")
    assert resumed_triggers(worker[1], theirs["session_id"]) == []


def test_bulk_an_end_user_naming_a_session_not_hers_gets_404_for_it(api: Api, stack: Any, worker: Any) -> None:
    alice = client_token_api(stack, "alice")
    hers = parked(alice)
    tenants = parked(api)
    bobs = parked(client_token_api(stack, "bob"))
    resp = alice.req("POST", "/v1/interrupts/resume", {"items": [tenants, hers, bobs]})
    assert statuses(resp) == [404, 200, 404]
    assert api.view(tenants["session_id"])["status"] == "interrupted"
    assert api.view(bobs["session_id"])["status"] == "interrupted"
    alice.wait_status(hers["session_id"], "done")
    bound = client_token_api(stack, "dev-user", session_id=tenants["session_id"])  # a token for one session
    assert statuses(bound.req("POST", "/v1/interrupts/resume", {"items": [bobs, tenants]})) == [404, 200]
    assert api.view(bobs["session_id"])["status"] == "interrupted"


def test_bulk_an_interrupt_the_callers_origin_may_not_clear_is_refused_alone(api: Api, stack: Any,
                                                                             worker: Any) -> None:
    """R17: an operator's interrupt outranks a client key; in a list it is refused as a single
    resume refuses it (403 `forbidden`), and the worker's interrupt beside it is answered."""
    put_api_key(stack.env["TABLE_NAME"], "hp_bulk_operator_key", stack.tenant, "ops", "operator")
    ops = Api(stack.base_url, "hp_bulk_operator_key")
    done = api.start("say hi")
    api.wait_status(done, "done")
    raised = ops.ok("POST", f"/v1/sessions/{done}/interrupts", {"reason": "hold"})
    held = {"session_id": done, "interrupt_id": raised["interrupt_id"], "payload": APPROVE}
    other = parked(api)
    resp = api.req("POST", "/v1/interrupts/resume", {"items": [held, other]})
    assert statuses(resp) == [403, 200]
    assert resp.json()["results"][0]["error"]["code"] == "forbidden"
    assert [i["interrupt_id"] for i in api.view(done)["interrupts"]] == [raised["interrupt_id"]]


def test_bulk_over_the_bound_or_naming_one_twice_is_refused_whole(api: Api, stack: Any) -> None:
    items = [parked(api), parked(api)]
    before = table_count(stack)
    over = [{**items[0], "interrupt_id": f"i{n}"} for n in range(MAX_ITEMS)] + items
    refusal(api.req("POST", "/v1/interrupts/resume", {"items": over}), 400, code="validation_error", param="items")
    twice = [items[0], items[1], {**items[0], "payload": {"approved": False}}]
    refusal(api.req("POST", "/v1/interrupts/resume", {"items": twice}), 400, code="validation_error",
            param="items[2].interrupt_id")
    refusal(api.req("POST", "/v1/interrupts/resume", {"items": []}), 400, param="items")
    refusal(api.req("POST", "/v1/interrupts/resume", {"items": [{**items[0], "session_id": "bad id"}]}), 400,
            param="items[0].session_id")
    assert table_count(stack) == before  # nothing recorded
    assert all(api.view(i["session_id"])["status"] == "interrupted" for i in items)


@pytest.mark.usefixtures("memory")
def test_bulk_throttling_mid_list_answers_nothing_twice_and_the_resend_completes_it() -> None:
    """AWS's throughput (the account's quota) running out mid-list: the items before it stand,
    it and the rest are reported unattempted, and the resend answers each remaining one once."""
    h = Harness()
    rows = parked_in_memory(h, 5)
    first = resume_all(ThrottledAfter(h.store, 3), h.parking, h.caller, items_of(rows))
    assert [o.resumed is not None for o in first] == [True, True, True, False, False]
    again = resume_all(h.store, h.parking, h.caller, items_of(rows))
    assert [o.resumed is not None and o.resumed.noop for o in again] == [True, True, True, False, False]
    for sid, iid, _ in rows:
        found = h.store.read_interrupt(h.caller.tenant, sid, iid)
        assert found is not None and len(found.approvals) == 1 and status_of(h, sid, iid) == "resolved"
