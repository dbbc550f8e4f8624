"""A3's edit before approve over HTTP on the local stack: the real handlers and authorizer,
DynamoDB's conditional writes, Step Functions holding the branch, the engine's KMS-signed receipt
and the signed seed worker. The rules on their own: tests/unit/test_edit_before_approve.py."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from holdpoint.core.ids import pair_id
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_cli_e2e import run
from tests.e2e.test_mcp_e2e import client as mcp_client
from tests.e2e.test_mcp_e2e import run as mcp_run
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


def test_edit_before_approve_cli_approves_with_edited_arguments(api: Api, stack: Any,
                                                                worker: tuple[str, list[dict[str, Any]]]) -> None:
    """`holdpoint approve --arguments` over HTTP: a bad edit is one line naming the field, a good
    one says the fingerprint it binds, `holdpoint show` who edited, and the worker gets the edit."""
    declare_agent(api, worker[0], approval={"edit": True}, tools=TOOLS)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    code, _, err = run(stack, "approve", sid, iid, "--arguments", '{"to": "carol", "bcc": "mallory"}')
    assert code == 1 and err.startswith("error: invalid_resume: ") and err.endswith("(arguments)\n")
    code, _, err = run(stack, "approve", sid, iid, "--arguments", "{not json")
    assert code == 1 and "--arguments is not valid JSON" in err
    with pytest.raises(SystemExit):  # no edit on a denial: `deny` has no --arguments
        run(stack, "deny", sid, iid, "--arguments", '{"to": "carol"}')
    code, out, err = run(stack, "approve", sid, iid, "--fingerprint", interrupt["action"]["fingerprint"],
                         "--arguments", '{"to": "carol"}')
    assert (code, err) == (0, "") and out.startswith(f"approved {iid} in {sid}\nwith your edit: fingerprint ")
    api.wait_status(sid, "done")
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["edit"]["arguments"] == {"to": "carol"} and resumed["edit"]["action"]["fingerprint"] in out


def test_edit_before_approve_over_mcp_answer_approval(api: Api, stack: Any,
                                                      worker: tuple[str, list[dict[str, Any]]]) -> None:
    """MCP's `answer_approval` takes `edited_arguments` (and `expect_fingerprint`) on any approval
    the caller may see: a schema-invalid edit is a tool error naming the field, a good one binds
    the new fingerprint and reaches the worker."""
    declare_agent(api, worker[0], approval={"edit": True}, tools=TOOLS)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    fingerprint, aid = interrupt["action"]["fingerprint"], pair_id(sid, interrupt["interrupt_id"])

    async def go() -> tuple[Any, Any]:
        async with mcp_client(stack, stack.api_key) as mcp:
            bad = await mcp.call_tool("answer_approval", {"id": aid, "payload": {"approved": True},
                                                          "edited_arguments": {"to": 7}})
            done = await mcp.call_tool("answer_approval", {"id": aid, "payload": {"approved": True},
                                                           "expect_fingerprint": fingerprint,
                                                           "edited_arguments": {"to": "carol"}})
            return bad, done

    bad, done = mcp_run(go())
    assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_resume"
    assert bad.structured_content["error"]["param"] == "arguments.edited_arguments.to"
    answered = done.structured_content
    assert answered["status"] == "resolved" and answered["noop"] is False, answered
    assert answered["action"]["fingerprint"] != fingerprint
    assert answered["edits"][0]["original"]["fingerprint"] == fingerprint
    api.wait_status(sid, "done")
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["edit"]["arguments"] == {"to": "carol"} and resumed["channel"] == "mcp"


def test_edit_before_approve_over_agui_resume(api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """AG-UI's `resume[]` entry takes `arguments` (a Holdpoint addition): every entry is checked
    before any is written, a bad edit is 400 naming `resume[0].arguments.to`, a good one reaches
    the worker with the edit."""
    declare_agent(api, worker[0], approval={"edit": True}, tools=TOOLS)
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    entry = {"interruptId": interrupt["interrupt_id"], "status": "resolved", "payload": {"approved": True}}
    run_path = "/v1/channels/ag-ui/agents/assistant/run"
    wait_execution(stack, sid, interrupt["interrupt_id"], "RUNNING")  # the park's own writes are done
    before = table_count(stack)
    bad = {"threadId": sid, "runId": "r-edit-1", "messages": [], "resume": [{**entry, "arguments": {"to": 7}}]}
    refusal(api.req("POST", run_path, bad), 400, code="invalid_resume", param="resume[0].arguments.to")
    assert table_count(stack) == before
    good = {"threadId": sid, "runId": "r-edit-2", "messages": [], "resume": [{**entry, "arguments": {"to": "carol"}}]}
    assert api.req("POST", run_path, good).status_code == 200
    api.wait_status(sid, "done")
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["edit"]["arguments"] == {"to": "carol"} and resumed["channel"] == "agui"
    assert resumed["edit"]["original"]["fingerprint"] == interrupt["action"]["fingerprint"]
