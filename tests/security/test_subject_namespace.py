"""Issue 19, class 6d: end users and API keys are told apart in approver policies. A policy's bare
`subjects`/`groups` entry names API-key principals only; an end user (a client token's subject or
its `groups` claim) is named `user:NAME`. An end user whose id is `ann` is not the operator `ann`."""

from __future__ import annotations

from typing import Any

from holdpoint.aws.keys import put_api_key
from holdpoint.core.approvals import refusal_reason
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
