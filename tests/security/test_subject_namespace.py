"""Issue 19, class 6d: end users and API keys are told apart in approver policies. A policy's bare
`subjects`/`groups` entry names API-key principals only; an end user (a client token's subject or
its `groups` claim) is named `user:NAME`. An end user whose id is `ann` is not the operator `ann`."""

from __future__ import annotations

from typing import Any

from holdpoint.aws.keys import put_api_key
from holdpoint.core import approvals
from holdpoint.core.policy import Policy
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, declare_agent


def test_subject_namespace_bare_entries_name_keys_and_user_entries_end_users() -> None:
    def admits(policy: dict[str, Any], subject: str, groups: tuple[str, ...], end_user: bool) -> bool:
        return refusal_reason(policy, subject, "client", groups, None, False, end_user=end_user) is None

    assert admits({"subjects": ["ann"]}, "ann", (), end_user=False)
    assert not admits({"subjects": ["ann"]}, "ann", (), end_user=True)
    assert admits({"subjects": ["user:ann"]}, "ann", (), end_user=True)
    assert not admits({"subjects": ["user:ann"]}, "ann", (), end_user=False)
    assert not admits({"subjects": ["user:ann"]}, "user:ann", (), end_user=False)  # a key named `user:ann`
    assert admits({"subjects": ["key:user:ann"]}, "user:ann", (), end_user=False)
    assert admits({"subjects": ["key:ann"]}, "ann", (), end_user=False)
    assert not admits({"groups": ["board"]}, "zoe", ("board",), end_user=True)
    assert admits({"groups": ["user:board"]}, "zoe", ("board",), end_user=True)
    assert admits({"groups": ["board"]}, "zoe", ("board",), end_user=False)
    assert not admits({"groups": ["user:board"]}, "zoe", ("board",), end_user=False)
    escalated = {"subjects": ["bob"], "escalate_to": {"subjects": ["ann"]}}
    assert refusal_reason(escalated, "ann", "client", (), None, True, end_user=True) is not None
    assert refusal_reason(escalated, "ann", "client", (), None, True) is None
    why = refusal_reason({"subjects": ["ann"]}, "ann", "client", (), None, False, end_user=True) or ""
    assert "user:ann is not one of the policy's approvers" in why


def test_subject_namespace_an_end_user_named_like_the_operator_is_not_the_operator(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    declare_agent(api, worker[0], approval={"subjects": ["ann"]})
    put_api_key(stack.env["TABLE_NAME"], "hp_ns_ann", stack.tenant, "ann", "client")
    operator_ann = Api(stack.base_url, "hp_ns_ann")
    user_ann = client_token_api(stack, "ann")
    sid = user_ann.start()
    [interrupt] = user_ann.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    before = table_count(stack)
    refusal(user_ann.resume(sid, iid, {"approved": True}), 403, code="not_an_approver", param="interrupt_id")
    assert user_ann.ok("GET", "/v1/interrupts?approver=me")["interrupts"] == []
    assert table_count(stack) == before
    assert [i["interrupt_id"] for i in operator_ann.ok("GET", "/v1/interrupts?approver=me")["interrupts"]] == [iid]
    assert operator_ann.resume(sid, iid, {"approved": True}).status_code == 200
    assert user_ann.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."


def test_subject_namespace_a_user_entry_admits_the_end_user_and_not_the_key(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    declare_agent(api, worker[0], approval={"subjects": ["user:ann"]})
    put_api_key(stack.env["TABLE_NAME"], "hp_ns_ann", stack.tenant, "ann", "client")
    user_ann = client_token_api(stack, "ann")
    sid = user_ann.start()
    iid = user_ann.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    refusal(Api(stack.base_url, "hp_ns_ann").resume(sid, iid, {"approved": True}), 403, code="not_an_approver")
    assert user_ann.resume(sid, iid, {"approved": True}).status_code == 200
    assert user_ann.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."


def test_subject_namespace_an_end_user_never_reaches_what_the_api_key_of_the_same_name_started(
        stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Sessions record who started them (`end_user`: a client token's subject, or none for an API
    key), and a client token reaches only sessions its own subject started: not a session the API
    key `ann` started, over the listing, the view, inputs, the inbox, resumes or the WebSocket."""
    from tests.security.test_live_tenant_wall import answers

    put_api_key(stack.env["TABLE_NAME"], "hp_operator_ann_key_ns", "dev", "ann", "operator")
    operator_ann = Api(stack.base_url, "hp_operator_ann_key_ns")
    declare_agent(operator_ann, worker[0])
    theirs = operator_ann.start("Email Bob")
    iid = operator_ann.wait_status(theirs, "interrupted")["interrupts"][0]["interrupt_id"]
    end_user_ann = client_token_api(stack, "ann")
    mine = end_user_ann.start("say hi")
    end_user_ann.wait_status(mine, "done")
    before = table_count(stack)

    assert [s["session_id"] for s in end_user_ann.ok("GET", "/v1/sessions")["sessions"]] == [mine]
    refusal(end_user_ann.req("GET", f"/v1/sessions/{theirs}"), 404, code="not_found")
    refusal(end_user_ann.req("POST", f"/v1/sessions/{theirs}/inputs", {
        "type": "client.message", "message": {"role": "user", "content": "say hi"}}), 404, code="not_found")
    refusal(end_user_ann.req("POST", f"/v1/sessions/{theirs}/interrupts/{iid}/resume",
                             {"payload": {"approved": True}}), 404, code="not_found")
    assert end_user_ann.ok("GET", "/v1/interrupts")["interrupts"] == []
    assert table_count(stack) == before
    token = end_user_ann.http.headers["Authorization"][7:]
    assert answers(stack, token, theirs) == ([], ["not_found"])
    assert answers(stack, token, mine)[0]  # its own session it does follow
    rows = {s["session_id"]: s["owner"] for s in operator_ann.ok("GET", "/v1/sessions")["sessions"]}
    assert rows[theirs] == "ann" and rows[mine] == "ann"  # the listing shows the subject either way


def test_subject_namespace_mcp_an_end_user_gets_its_own_approvals_session_not_the_keys(
        stack: Any, api: Api) -> None:
    from tests.security.test_mcp import settled, tool

    put_api_key(stack.env["TABLE_NAME"], "hp_operator_ann_key_mcp", "dev", "ann", "operator")
    operator_ann = Api(stack.base_url, "hp_operator_ann_key_mcp")
    theirs = tool(operator_ann, "request_approval", {"question": "Rotate the production signing key?"})
    settled(operator_ann, theirs["taskId"])
    end_user_ann = client_token_api(stack, "ann")
    assert tool(end_user_ann, "list_pending_approvals", {})["structuredContent"]["approvals"] == []
    assert tool(end_user_ann, "get_approval", {"id": theirs["taskId"]}).get("isError")
    assert [a["question"] for a in tool(operator_ann, "list_pending_approvals", {})["structuredContent"]["approvals"]] \
        == ["Rotate the production signing key?"]


def refusal_reason(policy: dict[str, Any], *args: Any, **kw: Any) -> str | None:
    """The rule, with the policy written as its JSON form."""
    return approvals.refusal_reason(Policy.from_item(policy), *args, **kw)
