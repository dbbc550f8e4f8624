"""Attacks on A3's edit before approve, over HTTP on the local stack (and one in process, through
the same functions' handlers on moto). Each is refused with a 4xx naming the field and why, and
records nothing (the table is unchanged), on both resume routes where the body is read (the
resume function's own check, and `interrupt.resume` on /inputs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from holdpoint import assembly
from holdpoint.core.ids import pair_id
from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_mcp_e2e import client as mcp_client
from tests.e2e.test_mcp_e2e import run as mcp_run
from tests.harness import Harness
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, declare_agent, wait_execution
from tests.unit.test_api import assert_error, call_api, call_resume, table_items
from tests.unit.test_approver_policies import asking

YES = {"approved": True}
STRICT = [{"name": "send_email", "input": {"type": "object", "properties": {"to": {"type": "string"}},
                                           "required": ["to"], "additionalProperties": False}}]


def parked(api: Api, stack: Any, worker_url: str, approval: dict[str, Any],
           who: Api | None = None) -> tuple[str, str, str]:
    """A session (started by `who`, the tenant's key by default) parked on send_email under `approval`:
    its id, the interrupt's and the action's fingerprint."""
    declare_agent(api, worker_url, approval=approval, tools=STRICT)
    sid = (who or api).start()
    [interrupt] = (who or api).wait_status(sid, "interrupted")["interrupts"]
    wait_execution(stack, sid, interrupt["interrupt_id"], "RUNNING")  # the park's own writes are done
    return sid, interrupt["interrupt_id"], api.view(sid)["interrupts"][0]["action"]["fingerprint"]


def both_routes(who: Api, sid: str, iid: str, body: dict[str, Any]) -> list[requests.Response]:
    """The same answer by the resume route and by `interrupt.resume` on the inputs route."""
    return [who.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", body),
            who.req("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": iid, **body})]


def test_edit_before_approve_attacks_each_refused_naming_the_field_and_recording_nothing(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    sid, iid, fingerprint = parked(api, stack, worker[0], {"subjects": ["ann"], "edit": True})
    ann = approver(stack, "ann")
    before, events = table_count(stack), len(api.events(sid))
    attacks: list[tuple[dict[str, Any], int, str, str]] = [
        # an edit on a denial: nothing would run, so there is nothing to edit
        ({"payload": {"approved": False}, "arguments": {"to": "mallory"}}, 400, "invalid_resume", "arguments"),
        # an edit the tool's input schema refuses, by field
        ({"payload": YES, "arguments": {"to": ["a", "b"]}}, 400, "invalid_resume", "arguments.to"),
        ({"payload": YES, "arguments": {}}, 400, "invalid_resume", "arguments"),
        # an extra field smuggled in where the schema forbids any
        ({"payload": YES, "arguments": {"to": "bob", "bcc": "mallory"}}, 400, "invalid_resume", "arguments"),
        # an edit of another version than the one the interrupt binds
        ({"payload": YES, "arguments": {"to": "carol"}, "expect_fingerprint": "0" * 64}, 409, "stale_approval",
         "expect_fingerprint"),
        # a huge edit: past the bound an edit is kept within
        ({"payload": YES, "arguments": {"to": "x" * 20_000}}, 413, "payload_too_large", "arguments"),
        # arguments that are not an object
        ({"payload": YES, "arguments": ["to", "mallory"]}, 400, "validation_error", "arguments"),
        ({"payload": YES, "arguments": "{\"to\": \"mallory\"}"}, 400, "validation_error", "arguments"),
    ]
    for body, status, code, param in attacks:
        for resp in both_routes(ann, sid, iid, body):
            err = refusal(resp, status, code=code, param=param)
            assert err["message"], body
    stale = refusal(both_routes(ann, sid, iid, {"payload": YES, "arguments": {"to": "c"},
                                                "expect_fingerprint": "0" * 64})[0], 409)
    assert stale["fingerprint"] == fingerprint  # the refusal names the fingerprint to approve
    assert table_count(stack) == before and len(api.events(sid)) == events
    assert api.view(sid)["interrupts"][0]["action"]["fingerprint"] == fingerprint


def test_edit_before_approve_attacks_where_the_policy_allows_no_edit(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    sid, iid, fingerprint = parked(api, stack, worker[0], {"subjects": ["ann"]})
    ann = approver(stack, "ann")
    before = table_count(stack)
    for resp in both_routes(ann, sid, iid, {"payload": YES, "arguments": {"to": "mallory"}}):
        err = refusal(resp, 403, code="edit_not_allowed", param="arguments")
        assert "edit: true" in err["message"]
    # An interrupt raised through the API may not turn on what the agent's policy does not allow.
    refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "approval": {"edit": True}}),
            400, code="validation_error", param="approval.edit")
    # A policy's `edit` is a boolean where it is declared.
    refusal(api.req("PUT", "/v1/agents/strict", {"approval": {"edit": "yes"}}), 400, code="validation_error",
            param="approval.edit")
    assert table_count(stack) == before
    assert api.view(sid)["interrupts"][0]["action"]["fingerprint"] == fingerprint


def test_edit_before_approve_attacks_an_end_user_of_another_session_finds_nothing(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    alice, mallory = client_token_api(stack, "alice"), client_token_api(stack, "mallory")
    users = {"subjects": ["user:alice", "user:mallory"], "edit": True}
    sid, iid, fingerprint = parked(api, stack, worker[0], users, alice)
    elsewhere = mallory.start("say hi")
    mallory.wait_status(elsewhere, "done")
    bound = client_token_api(stack, "mallory", session_id=elsewhere)
    before = table_count(stack)
    for who in (mallory, bound):
        for resp in both_routes(who, sid, iid, {"payload": YES, "arguments": {"to": "mallory"}}):
            refusal(resp, 404, code="not_found")
    assert table_count(stack) == before
    assert api.view(sid)["interrupts"][0]["action"]["fingerprint"] == fingerprint


def test_edit_before_approve_attacks_outsiders_plain_questions_and_mcp(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Someone the policy does not admit is refused as an approver before any edit is looked at; a
    plain question has no action to edit; MCP's `answer_approval` refuses an edit the policy does
    not allow, naming its own field; and an edit sent to a closed interrupt changes nothing (A4)."""
    sid, iid, fingerprint = parked(api, stack, worker[0], {"subjects": ["ann"], "edit": True})
    eve, ann = approver(stack, "eve"), approver(stack, "ann")  # their keys are items of the table too
    before = table_count(stack)
    for resp in both_routes(eve, sid, iid, {"payload": YES, "arguments": {"to": "eve"}}):
        refusal(resp, 403, code="not_an_approver", param="interrupt_id")
    assert table_count(stack) == before
    raised = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "interrupt_id": "int-plain"})
    assert "action" not in raised["interrupt"]
    assert table_count(stack) > before  # the raise's own items (its park record is left out)
    refusal(ann.req("POST", f"/v1/sessions/{sid}/interrupts/int-plain/resume",
                    {"payload": YES, "arguments": {"to": "x"}}), 400, code="invalid_resume", param="arguments")
    [plain] = [i for i in api.view(sid)["interrupts"] if i["interrupt_id"] == "int-plain"]
    assert "approvals" not in plain and "edits" not in plain  # nothing recorded

    async def go() -> Any:
        async with mcp_client(stack, stack.api_key) as mcp:
            return await mcp.call_tool("answer_approval", {"id": pair_id(sid, iid), "payload": YES,
                                                           "edited_arguments": {"to": "mallory"}})

    declare_agent(api, worker[0], approval={"subjects": [stack.subject]}, tools=STRICT)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")
    snapshot = table_count(stack)
    refused = mcp_run(go())
    assert refused.is_error and refused.structured_content["error"]["code"] == "edit_not_allowed"
    assert refused.structured_content["error"]["param"] == "arguments.edited_arguments"
    assert table_count(stack) == snapshot
    # Answered as it stands, the interrupt is closed: a later edit is a no-op and changes nothing.
    assert api.resume(sid, iid, {"approved": True}).json()["noop"] is False
    api.wait_status(sid, "done")
    late = api.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": YES, "arguments": {"to": "z"}})
    assert late.status_code == 200 and late.json()["noop"] is True and "edit" not in late.json()
    assert api.view(sid)["interrupts"] == [] and "edits" not in api.ok("GET", "/v1/interrupts?status=resolved")[
        "interrupts"][0]


@pytest.fixture
def handlers(aws: dict[str, str]) -> Iterator[None]:
    """moto's AWS, and the functions' cached clients built fresh for this test."""
    assembly.reset()
    yield
    assembly.reset()


def as_approver(sid: str, who: str, body: dict[str, Any]) -> list[tuple[int, Any]]:
    """`body` sent by `who` on both resume routes, through the resume and API functions' handlers."""
    person = {"subject": who, "origin": "operator"}
    return [call_resume(sid, "int-ok", body, **person),
            call_api("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": "int-ok",
                                                            **body}, **person)]


@pytest.mark.usefixtures("handlers")
def test_edit_before_approve_attacks_a_second_answer_may_not_slip_in_an_edit() -> None:
    """Ann's approval of a quorum's action stands. A second answer of hers carrying other arguments
    would be a no-op that drops the edit unseen (her earlier approval counted for an action she
    now wants changed): it is refused 409 `conflict` naming `arguments` on both routes, and records
    nothing. Her retries stay 200 no-ops, and Bob may still edit, which restarts the count."""
    h = Harness(asking(), tenant="dev", agent={"approval": {"subjects": ["ann", "bob"], "quorum": 2, "edit": True}})
    h.say("Email Bob")
    sid = h.session_id or ""
    fingerprint = h.open_interrupt()["action"]["fingerprint"]
    status, out = call_resume(sid, "int-ok", {"payload": YES}, subject="ann", origin="operator")
    assert status == 200 and out["noop"] is False and out["approvals"] == 1, out
    before, events = table_items(), len(h.events())
    for status, out in as_approver(sid, "ann", {"payload": YES, "arguments": {"to": "mallory"}}):
        assert_error(status, out, 409, code="conflict", param="arguments")
        assert "already answered" in out["error"]["message"]
    for body in ({"payload": YES}, {"payload": YES, "arguments": {"to": "bob"}}):  # retries: no-ops
        for status, out in as_approver(sid, "ann", body):
            assert status == 200 and out["noop"] is True and "edit" not in out, out
    assert table_items() == before and len(h.events()) == events
    assert h.open_interrupt()["action"]["fingerprint"] == fingerprint
    status, out = call_resume(sid, "int-ok", {"payload": YES, "arguments": {"to": "carol"}}, subject="bob",
                              origin="operator")
    assert status == 200 and out["noop"] is False and out["edit"]["superseded"] == 1 and out["approvals"] == 1, out
