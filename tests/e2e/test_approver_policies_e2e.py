"""A2 approver policies and quorums, and A6's resume `comment`, over HTTP on the local stack: the
real handlers and authorizer, DynamoDB, Step Functions holding the branch, and the signed seed
worker (which sends the email when `payload.approved` is true)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from holdpoint.aws.keys import put_api_key
from holdpoint.aws.store import session_pk
from holdpoint_sdk.receipts import verify_receipt
from tests.security.probes import refusal, table_count
from tests.stack import Api, declare_agent, execution_status, resumed_triggers, wait_execution

BOARD = {"subjects": ["ann", "bob", "cid"], "quorum": 2, "forbid_requester": True}


def approver(stack: Any, subject: str, *, origin: str = "operator", groups: list[str] | None = None) -> Api:
    """A client holding an API key of the stack's tenant for `subject` (in `groups`)."""
    key = f"hp_a2_{subject}_{'_'.join(groups or [])}"
    put_api_key(stack.env["TABLE_NAME"], key, stack.tenant, subject, origin, groups=groups)
    return Api(stack.base_url, key)


def stored_answers(stack: Any, sid: str, iid: str) -> list[dict[str, Any]]:
    """The answers recorded on the interrupt's item, read straight from the table."""
    item = stack.client("dynamodb").get_item(TableName=stack.env["TABLE_NAME"], ConsistentRead=True, Key={
        "PK": {"S": session_pk(stack.tenant, sid)}, "SK": {"S": f"I#{iid}"}})["Item"]
    return [json.loads(a["S"]) for a in item.get("approvals", {}).get("L", [])]


def test_a2_a6_a_policy_and_a_quorum_over_http(api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """docs/WALKTHROUGH.md's "Approver policies and quorums" steps, request for request."""
    declare_agent(api, worker[0], approval=BOARD)
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    assert interrupt["policy"] == BOARD and interrupt["requester"] == f"key:{stack.subject}"
    wait_execution(stack, sid, iid, "RUNNING")
    before, events = table_count(stack), len(api.events(sid))
    # The requester (and anyone else outside the policy) may not answer: 403, nothing recorded.
    err = refusal(api.resume(sid, iid, {"approved": True}), 403, code="not_an_approver", param="interrupt_id")
    assert stack.subject in err["message"]
    assert table_count(stack) == before and len(api.events(sid)) == events
    # Ann's answer is recorded with her comment; the branch stays parked.
    first = ann.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume",
                    {"payload": {"approved": True}, "comment": "checked the recipient"})
    assert first.status_code == 200, first.text
    assert first.json() == {"ok": True, "interrupt_id": iid, "noop": False, "status": "open", "approvals": 1,
                            "quorum": 2}
    [recorded] = api.view(sid)["interrupts"][0]["approvals"]
    assert (recorded["subject"], recorded["status"], recorded["comment"]) == ("ann", "approved",
                                                                               "checked the recipient")
    assert api.view(sid)["status"] == "interrupted" and execution_status(stack, sid, iid) == "RUNNING"
    # A second answer by Ann is a no-op.
    again = ann.resume(sid, iid, {"approved": False}).json()
    assert again["noop"] is True and again["answered"]["status"] == "approved" and again["approvals"] == 1
    # Bob's completes the quorum: the branch wakes once, with his answer and, beside it, every answer.
    done = bob.resume(sid, iid, {"approved": True})
    assert done.status_code == 200 and done.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    view = api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    assert view["messages"][2]["content"] == "sent"
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["payload"] == {"approved": True} and resumed["verdict"] == "approved"
    assert resumed["responder"] == {"subject": "bob", "origin": "operator"}
    assert [(a["subject"], a["comment"]) for a in resumed["approvals"]] == [("ann", "checked the recipient"),
                                                                            ("bob", None)]
    assert len([e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]) == 1
    # The approval receipt the engine signed with the template's KMS key, checked offline against
    # the key set the stack serves and the call the worker is about to run.
    jwks = requests.get(f"{stack.base_url}/.well-known/jwks.json", timeout=30).json()
    action = interrupt["action"]
    receipt = verify_receipt(resumed["receipt"], {"tool": action["tool"], "arguments": action["arguments"]}, jwks)
    assert [a["subject"] for a in receipt["approvals"]] == ["ann", "bob"] and receipt["interrupt"] == iid  # type: ignore[union-attr]


def test_a2_the_first_denial_resolves_as_denied_over_http(api: Api, stack: Any,
                                                          worker: tuple[str, list[dict[str, Any]]]) -> None:
    # The tool's own policy (it replaces the agent's, which would admit only "nobody").
    tools = [{"name": "send_email", "input": {"type": "object", "required": ["to"]},
              "approval": {"groups": ["board"], "quorum": 2}}]
    declare_agent(api, worker[0], tools=tools, approval={"subjects": ["nobody"]})
    ann, cid = approver(stack, "ann", groups=["board"]), approver(stack, "cid", groups=["board"])
    outsider = approver(stack, "eve", groups=["sales"])
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    assert interrupt["policy"] == {"groups": ["board"], "quorum": 2}
    refusal(outsider.resume(sid, iid, {"approved": True}), 403, code="not_an_approver")
    assert ann.resume(sid, iid, {"approved": True}).json()["status"] == "open"
    out = cid.req("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": iid,
                                                        "payload": {"approved": False}, "comment": "not today"})
    assert out.status_code == 200 and out.json()["noop"] is False, out.text
    view = api.wait_status(sid, "done")
    assert view["messages"][-1]["content"] == "I did not send it."
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["payload"] == {"approved": False} and resumed["verdict"] == "denied"
    assert [a["status"] for a in resumed["approvals"]] == ["approved", "denied"]


def test_a2_bad_policies_are_refused_at_declaration_over_http(api: Api, stack: Any,
                                                               worker: tuple[str, list[dict[str, Any]]]) -> None:
    before = table_count(stack)
    for approval, param in (({"subjects": []}, "approval.subjects"),
                            ({"subjects": ["ann"], "quorum": 2}, "approval.quorum"),
                            ({"escalate_to": {}}, "approval.escalate_to")):
        refusal(api.req("PUT", "/v1/agents/strict", {"approval": approval}), 400, code="validation_error",
                param=param)
    assert table_count(stack) == before
    declare_agent(api, worker[0], approval={"subjects": ["ann", "bob"]})
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    before = table_count(stack)
    widen = {"reason": "review", "approval": {"subjects": ["ann", "eve"]}}
    refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts", widen), 400, code="validation_error",
            param="approval.subjects")
    long = {"payload": True, "comment": "x" * 2001}
    refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts/int-x/resume", long), 400, code="validation_error",
            param="comment")
    assert table_count(stack) == before
    raised = api.ok("POST", f"/v1/sessions/{sid}/interrupts",
                    {"reason": "review", "interrupt_id": "int-narrow", "approval": {"subjects": ["bob"]}})
    assert raised["interrupt"]["policy"] == {"subjects": ["bob"]}
    refusal(approver(stack, "ann").resume(sid, "int-narrow", {"approved": True}), 403, code="not_an_approver")
    refusal(approver(stack, "bob").resume(sid, "int-narrow", True), 400, code="invalid_resume", param="payload")
    assert approver(stack, "bob").resume(sid, "int-narrow", {"approved": True}).json()["noop"] is False


def test_a2_ten_concurrent_approvers_on_a_quorum_of_two(api: Api, stack: Any,
                                                        worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Exactly two answers recorded, one resolution, one `interrupt.resumed`, however they race."""
    declare_agent(api, worker[0], approval={"groups": ["board"], "quorum": 2})
    board = [approver(stack, f"member-{i}", groups=["board"]) for i in range(10)]
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda member: member.resume(sid, iid, {"approved": True}), board))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    bodies = [a.json() for a in answers]
    written = [b for b in bodies if not b["noop"]]
    assert len(written) == 2, bodies
    assert sorted(b.get("status", "resolved") for b in written) == ["open", "resolved"]
    assert all(b["resolved"]["status"] == "resolved" for b in bodies if b["noop"]), bodies
    view = api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    assert view["messages"][-1]["content"] == "Email sent."
    recorded = stored_answers(stack, sid, iid)
    assert len(recorded) == 2 and len({a["subject"] for a in recorded}) == 2
    [resumed] = resumed_triggers(worker[1], sid)
    assert [a["subject"] for a in resumed["approvals"]] == [a["subject"] for a in recorded]
    assert len([e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]) == 1


def test_a2_a_client_token_carries_groups_from_its_claim(api: Api, stack: Any,
                                                         worker: tuple[str, list[dict[str, Any]]]) -> None:
    """`POST /v1/client-tokens` with `identity.groups`: the end user answers in their own session
    as a member of the group; a token without the group is not an approver. An end user's group is
    named `user:reviewers` (a bare `reviewers` names API keys' group only)."""
    declare_agent(api, worker[0], approval={"groups": ["user:reviewers"]})
    backend = approver(stack, "backend", origin="machine")
    tokens = {}
    for name, groups in (("zoe", ["reviewers"]), ("yan", None)):
        identity = {"id": name, **({"groups": groups} if groups else {})}
        minted = backend.req("POST", "/v1/client-tokens", {"identity": identity})
        assert minted.status_code == 200, minted.text
        tokens[name] = Api(stack.base_url, minted.json()["token"])
    for name, expected in (("yan", 403), ("zoe", 200)):
        user = tokens[name]
        sid = user.start()
        iid = user.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
        answer = user.resume(sid, iid, {"approved": True})
        assert answer.status_code == expected, answer.text
    assert user.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
