"""A3's edit before approve over HTTP on the local stack: the real handlers and authorizer,
DynamoDB's conditional writes, Step Functions holding the branch, the engine's KMS-signed receipt
and the signed seed worker. The rules on their own: tests/unit/test_edit_before_approve.py."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.e2e.test_approver_policies_e2e import approver
from tests.security.probes import refusal, table_count
from tests.stack import Api, declare_agent, resumed_triggers, wait_execution

BOARD = {"subjects": ["ann", "bob", "cid"], "quorum": 2, "edit": True}
TOOLS = [{"name": "send_email", "input": {"type": "object", "properties": {"to": {"type": "string"}},
                                          "required": ["to"], "additionalProperties": False}}]


def resume(who: Api, sid: str, iid: str, body: dict[str, Any]) -> requests.Response:
    return who.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", body)


def test_edit_before_approve_an_edited_approval_restarts_the_quorum_and_reaches_the_worker(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    declare_agent(api, worker[0], approval=BOARD, tools=TOOLS)
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid, raised = interrupt["interrupt_id"], interrupt["action"]
    assert interrupt["policy"]["edit"] is True and json.loads(raised["arguments"]) == {"to": "bob"}
    wait_execution(stack, sid, iid, "RUNNING")
    first = resume(ann, sid, iid, {"payload": {"approved": True}, "expect_fingerprint": raised["fingerprint"]})
    assert first.json()["approvals"] == 1, first.text
    # A schema-invalid edit is refused naming the field, and records nothing.
    before = table_count(stack)
    refusal(resume(bob, sid, iid, {"payload": {"approved": True}, "arguments": {"to": 7}}), 400,
            code="invalid_resume", param="arguments.to")
    assert table_count(stack) == before
    # Bob edits as he approves: the approval binds the new fingerprint, and the count restarts.
    edited = resume(bob, sid, iid, {"payload": {"approved": True}, "expect_fingerprint": raised["fingerprint"],
                                    "arguments": {"to": "carol"}, "comment": "the right recipient"})
    assert edited.status_code == 200, edited.text
    body = edited.json()
    assert (body["status"], body["approvals"], body["quorum"]) == ("open", 1, 2)
    new = body["edit"]["fingerprint"]
    assert body["edit"] == {"fingerprint": new, "replaces": raised["fingerprint"], "restarted": True,
                            "superseded": 1} and new != raised["fingerprint"]
    view = api.view(sid)["interrupts"][0]
    assert view["action"]["fingerprint"] == new and json.loads(view["action"]["arguments"]) == {"to": "carol"}
    assert view["edits"][0]["original"] == raised and view["edits"][0]["by"]["subject"] == "bob"
    # Ann's approval was of the other version: her stale fingerprint is refused, naming the new one.
    stale = refusal(resume(ann, sid, iid, {"payload": {"approved": True}, "expect_fingerprint": raised["fingerprint"]}),
                    409, code="stale_approval", param="expect_fingerprint")
    assert stale["fingerprint"] == new
    done = resume(ann, sid, iid, {"payload": {"approved": True}, "expect_fingerprint": new})
    assert done.json() == {"ok": True, "interrupt_id": iid, "noop": False}, done.text
    api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["edit"]["arguments"] == {"to": "carol"} and resumed["edit"]["action"]["fingerprint"] == new
    assert resumed["edit"]["original"]["fingerprint"] == raised["fingerprint"]
    assert [a["subject"] for a in resumed["approvals"]] == ["bob", "ann"]
    # The receipt the engine signed with KMS is over the edited action, not the one raised.
    jwks = requests.get(f"{stack.base_url}/.well-known/jwks.json", timeout=30).json()
    claims = verify_receipt(resumed["receipt"], {"tool": "send_email", "arguments": {"to": "carol"}}, jwks)
    assert claims["action"]["fingerprint"] == new  # type: ignore[index]
    try:
        verify_receipt(resumed["receipt"], {"tool": "send_email", "arguments": raised["arguments"]}, jwks)
        raise AssertionError("the receipt verified for the original action")
    except ReceiptRefused:
        pass
    # The audit keeps the action as raised, the edit and who made it, and every answer.
    [item] = [i for i in api.ok("GET", "/v1/interrupts?status=resolved")["interrupts"] if i["interrupt_id"] == iid]
    assert item["edits"][0]["original"]["fingerprint"] == raised["fingerprint"]
    assert item["edits"][0]["by"] == {"subject": "bob", "origin": "operator"} and item["action"]["fingerprint"] == new
    assert [a["subject"] for a in item["approvals"]] == ["ann", "bob", "ann"]


def test_edit_before_approve_two_racing_editors_one_wins(api: Api, stack: Any,
                                                         worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Two approvers edit the same version at once: one edit is recorded, the other is refused
    (409 naming the winner's fingerprint), never both."""
    declare_agent(api, worker[0], approval={**BOARD, "quorum": 3}, tools=TOOLS)
    editors = [approver(stack, s) for s in ("ann", "bob")]
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid, raised = interrupt["interrupt_id"], interrupt["action"]["fingerprint"]
    with ThreadPoolExecutor(2) as pool:
        outs = list(pool.map(lambda pair: resume(pair[1], sid, iid, {
            "payload": {"approved": True}, "expect_fingerprint": raised, "arguments": {"to": f"to-{pair[0]}"}}),
            enumerate(editors)))
    codes = sorted(o.status_code for o in outs)
    view = api.view(sid)["interrupts"][0]
    assert len(view["edits"]) == 1 and len(view["approvals"]) == 1, view
    assert codes == [200, 409], [o.text for o in outs]
    [lost] = [o for o in outs if o.status_code == 409]
    assert lost.json()["error"]["code"] == "stale_approval"
    assert lost.json()["error"]["fingerprint"] == view["action"]["fingerprint"] != raised
