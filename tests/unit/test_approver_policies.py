"""A2 approver policies and quorums, and A6's resume `comment` (PROTOCOL.md §3), against the real
core and store on moto. HTTP versions over the local stack: tests/e2e/test_approver_policies_e2e.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.core import answers, approvals
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.answers import given
from holdpoint.core.approvals import narrow, refusal_reason
from holdpoint.core.errors import PolicyError, Refusal
from holdpoint.core.policy import Approvers, Policy
from holdpoint.core.protocols.approval import policy_of
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Progress, Resumed, resume
from tests.harness import TOOLS, Harness
from tests.unit.test_api import call_api, call_resume, http_event, parse, start_session, table_items
from tests.unit.test_approvals import spent_tokens

pytestmark = pytest.mark.usefixtures("memory")

ANN, BOB, CID, EVE = (Caller("t1", s, "operator") for s in ("ann", "bob", "cid", "eve"))
BOARD = {"subjects": ["ann", "bob", "cid"], "quorum": 2, "forbid_requester": True}


@pytest.fixture
def handlers(aws: dict[str, str]) -> Iterator[None]:
    assembly.reset()
    yield
    assembly.reset()


def asking(approval: dict[str, Any] | None = None, log: list[dict[str, Any]] | None = None) -> Any:
    """A worker that asks before every tool (with `approval` on its interrupt action) and reports
    what the resume delivered as the tool's result; it keeps every request in `log`."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        if log is not None:
            log.append(req)
        t = req["trigger"]
        if t["type"] == "tool.execute":
            action = {"type": "interrupt", "interrupt_id": "int-ok", "reason": "approve"}
            return {"actions": [{**action, "approval": approval} if approval else action]}
        if t["type"] == "interrupt.resumed":
            return {"actions": [{"type": "tool.result", "result": json.dumps(t["payload"])}]}
        return req["proposed"]

    return decide


def board(policy: dict[str, Any] | None = None, interrupt: dict[str, Any] | None = None, **agent: Any) -> Harness:
    """A session parked on send_email under the agent policy `policy` (the board by default)."""
    log: list[dict[str, Any]] = []
    h = Harness(asking(interrupt, log), agent={"approval": policy or BOARD, **agent})
    h.log = log
    h.say("Email Bob")
    return h


def refused(h: Harness, caller: Caller, payload: Any = None, **kw: Any) -> Refusal:
    assert h.session_id
    with pytest.raises(Refusal) as info:
        resume(h.store, h.parking, caller, h.session_id, "int-ok", payload, **kw)
    return info.value


def dynamodb_calls(h: Harness) -> list[str]:
    calls: list[str] = []
    h.store.client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    return calls


# --- the pure rules ---------------------------------------------------------------------------


def narrowed(base: dict[str, Any] | None, override: dict[str, Any] | None) -> dict[str, Any] | None:
    """`narrow` on policies written as their JSON form, answered in it."""
    out = narrow(Policy.from_item(base) if base is not None else None,
                 Policy.from_item(override) if override is not None else None)
    return out.to_item() if out is not None else None


def refused_by(policy: dict[str, Any] | None, *args: Any, **kw: Any) -> str | None:
    """`refusal_reason` with the policy and the escalation approvers written as their JSON form."""
    if len(args) > 5:
        args = (*args[:5], Approvers.from_item(args[5]))
    return refusal_reason(Policy.from_item(policy) if policy is not None else None, *args, **kw)


def test_a2_core_narrow_only_ever_narrows_and_names_the_field_that_would_widen() -> None:
    base = {"origins": ["client", "operator"], "subjects": ["ann", "bob"], "groups": ["finance"], "quorum": 1,
            "forbid_requester": True, "escalate_to": {"subjects": ["boss"]}}
    assert narrowed(base, None) == base and narrowed(None, None) is None
    out = narrowed(base, {"subjects": ["ann"], "quorum": 1, "origins": ["operator"]})
    assert out is not None and out["subjects"] == ["ann"] and "groups" not in out and out["origins"] == ["operator"]
    assert out["forbid_requester"] is True
    assert narrowed({}, {"subjects": ["zed"]}) == {"subjects": ["zed"]}  # naming no one admits anyone
    assert narrowed(None, {"origins": ["operator"]}) == {"origins": ["operator"]}  # nor does naming no origin
    assert narrowed({"subjects": ["ann"]}, {"origins": ["client"]}) == {"subjects": ["ann"], "origins": ["client"]}
    assert (narrowed(base, {"escalate_to": {"subjects": ["boss"]}}) or {})["escalate_to"] == {"subjects": ["boss"]}
    for override, param in (({"subjects": ["eve"]}, "subjects"), ({"groups": ["ops"]}, "groups"),
                            ({"origins": ["machine"]}, "origins"), ({"forbid_requester": False}, "forbid_requester"),
                            ({"quorum": 1}, "quorum"), ({"deny_resolves": False}, "deny_resolves"),
                            ({"subjects": ["ann"], "quorum": 2}, "quorum"),
                            ({"escalate_to": {"subjects": ["mallory"]}}, "escalate_to.subjects")):
        with pytest.raises(PolicyError) as info:
            narrowed({**base, "quorum": 2} if param == "quorum" and "subjects" not in override else base, override)
        assert info.value.param == param, (override, str(info.value))
    with pytest.raises(PolicyError) as info:
        narrowed({"subjects": ["ann"]}, {"groups": ["finance"]})  # a group may hold anyone: wider
    assert info.value.param == "groups"


def test_a2_core_refusal_reason_origins_subjects_groups_requester_and_escalation() -> None:
    policy = {"origins": ["operator"], "subjects": ["ann"], "groups": ["finance"], "forbid_requester": True}
    assert refused_by(None, "anyone", "client", (), None, False) is None
    assert refused_by(policy, "ann", "operator", (), "bob", False) is None
    assert refused_by(policy, "zoe", "operator", ("finance",), "bob", False) is None
    assert "origins operator" in (refused_by(policy, "ann", "client", (), None, False) or "")
    assert "not one of the policy's approvers" in (refused_by(policy, "eve", "operator", ("ops",), None, False)
                                                   or "")
    assert "own request" in (refused_by(policy, "ann", "operator", (), "ann", False) or "")
    assert refused_by({"forbid_requester": True}, "ann", "client", (), "ann", False) is not None
    # An escalated interrupt also admits its escalation approvers (the interrupt's, else the policy's).
    assert refused_by(policy, "boss", "operator", (), None, False, {"subjects": ["boss"]}) is not None
    assert refused_by(policy, "boss", "operator", (), "key:bob", True, {"subjects": ["boss"]}) is None
    assert refused_by(policy, "vp", "operator", ("execs",), "key:bob", True, {"groups": ["execs"]}) is None
    assert refused_by({**policy, "escalate_to": {"subjects": ["boss"]}}, "boss", "operator", (),
                          "key:bob", True) is None
    # The requester is a principal: the key `ann` is not the end user `ann`, and an unknown
    # requester never lets the rule be skipped (issue 29: an MCP requester approving itself).
    assert refused_by({"forbid_requester": True}, "ann", "client", (), "user:ann", False) is None
    assert refused_by({"forbid_requester": True}, "ann", "client", (), "user:ann", False, end_user=True)
    assert refused_by({"forbid_requester": True}, "ann", "operator", (), "key:ann", False)
    assert refused_by({"forbid_requester": True}, "ann", "operator", (), None, False)


# --- declaration ------------------------------------------------------------------------------


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
@pytest.mark.usefixtures("handlers")
def test_a2_bad_policies_are_refused_where_declared_naming_the_field() -> None:
    h = Harness(tenant="dev")
    before = table_items()
    tool = {"name": "send_email", "approval": {"subjects": ["ann"], "quorum": 3}}
    for agent, param in (({"approval": {"subjects": []}}, "approval.subjects"),
                         ({"approval": {"groups": []}}, "approval.groups"),
                         ({"approval": {"origins": ["root"]}}, "approval.origins[0]"),
                         ({"approval": {"subjects": ["ann", "bob"], "quorum": 3}}, "approval.quorum"),
                         ({"approval": {"quorum": 0}}, "approval.quorum"),
                         ({"approval": {"quorum": "2"}}, "approval.quorum"),
                         ({"approval": {"escalate_to": {}}}, "approval.escalate_to"),
                         ({"approval": {"approvers": ["ann"]}}, "approval.approvers"),
                         ({"tools": [tool]}, "tools[0].approval.quorum")):
        status, out = call_api("PUT", "/v1/agents/strict", agent)
        assert status == 400 and out["error"]["param"] == param, (agent, out)
    assert table_items() == before
    status, out = call_api("PUT", "/v1/agents/assistant", {
        "worker": {"python": "x"}, "approval": {"subjects": ["ann", "bob"]}})
    assert status == 400  # (worker.python is refused; declare through the store instead)
    h.store.put_agent("dev", "assistant", {"llm": {"provider": "scripted", "script": []},
                                           "approval": {"subjects": ["ann", "bob"], "quorum": 1}})
    sid = start_session(h, "say hi")
    before = table_items()
    for body, param in (({"reason": "r", "approval": {"subjects": ["eve"]}}, "approval.subjects"),
                        ({"reason": "r", "approval": {"subjects": ["ann"], "quorum": 2}}, "approval.quorum"),
                        ({"reason": "r", "approval": {"subjects": []}}, "approval.subjects"),
                        # An operator's hold that only clients may answer would admit no one (R17).
                        ({"reason": "r", "approval": {"origins": ["client"]}}, "approval.origins")):
        status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts", body, origin="operator")
        assert status == 400 and out["error"]["param"] == param, (body, out)
    assert table_items() == before


def test_a2_a_worker_interrupt_that_would_widen_the_policy_fails_the_decision() -> None:
    h = board(interrupt={"subjects": ["ann", "eve"]})
    [failed] = h.events("decision.failed")
    assert failed["data"]["error"]["param"] == "actions[0].approval.subjects"
    assert h.view()["interrupts"] == []


def test_a2_the_policy_in_force_is_frozen_on_the_interrupt_with_its_requester() -> None:
    # The agent's default, narrowed by the interrupt.
    h = board(interrupt={"subjects": ["ann", "bob"], "quorum": 2})
    [interrupt] = h.view()["interrupts"]
    assert interrupt["policy"] == {"subjects": ["ann", "bob"], "quorum": 2, "forbid_requester": True}
    assert interrupt["requester"] == "key:user-1"
    # A tool's own policy replaces the agent's for interrupts bound to its calls.
    tools = [{**TOOLS[0], "approval": {"groups": ["mail"]}}, TOOLS[1]]
    h = board(tools=tools)
    assert h.open_interrupt()["policy"] == {"groups": ["mail"]}
    # A later declaration of the agent changes nothing for a parked interrupt.
    h.store.put_agent("t1", "assistant", {"approval": {"subjects": ["eve"]}})
    assert h.open_interrupt()["policy"] == {"groups": ["mail"]}
    assert refused(h, EVE, True).code == "not_an_approver"


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a2_a_caller_outside_the_policy_gets_403_not_an_approver_and_nothing_changes() -> None:
    h = board({"origins": ["operator"], "subjects": ["ann"], "groups": ["finance"], "forbid_requester": True})
    tokens, calls = spent_tokens(h), dynamodb_calls(h)
    events, items = len(h.events()), table_items()
    cases = ((EVE, "not one of the policy's approvers"), (Caller("t1", "ann", "client"), "origins operator"),
             (Caller("t1", "user-1", "operator", groups=("finance",)), "own request"))
    calls.clear()
    for caller, why in cases:
        err = refused(h, caller, {"approved": True})
        assert (err.code, err.param) == ("not_an_approver", "interrupt_id") and why in err.message, err.message
    assert calls == ["GetItem"] * 3 and tokens == []
    assert len(h.events()) == events and table_items() == items and h.view()["status"] == "interrupted"
    # A member of an allowed group may answer.
    out = h.resume("int-ok", {"approved": True}, caller=Caller("t1", "zoe", "operator", groups=("finance",)))
    assert out == Resumed("int-ok", noop=False) and h.view()["status"] == "done"


# --- quorums ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a2_a_quorum_records_each_answer_once_and_resolves_when_reached() -> None:
    h = board()
    tokens, calls = spent_tokens(h), dynamodb_calls(h)
    assert h.session_id
    calls.clear()
    first = resume(h.store, h.parking, ANN, h.session_id, "int-ok", {"approved": True})
    assert first == Resumed("int-ok", noop=False, progress=Progress(approvals=1, quorum=2))
    assert calls == ["GetItem", "UpdateItem"] and tokens == []  # recorded, nothing woken
    assert h.view()["status"] == "interrupted"
    # A second answer by the same subject is a no-op, whatever it says.
    items = table_items()
    calls.clear()
    again = resume(h.store, h.parking, ANN, h.session_id, "int-ok", {"approved": False})
    assert again.noop is True and again.progress == Progress(approvals=1, quorum=2)
    assert again.answered is not None and (again.answered.status, again.answered.same_payload) == ("approved", False)
    assert calls == ["GetItem"] and table_items() == items and tokens == []
    [recorded] = h.open_interrupt()["approvals"]
    assert recorded["subject"] == "ann" and recorded["status"] == "approved" and recorded["at"].endswith("Z")
    calls.clear()
    done = resume(h.store, h.parking, BOB, h.session_id, "int-ok", {"approved": True})
    assert done == Resumed("int-ok", noop=False)
    assert calls == ["GetItem", "UpdateItem", "GetItem"] and len(tokens) == 1
    h.wake("int-ok", "resumed")
    assert h.view()["status"] == "done"
    [resumed] = h.triggers("interrupt.resumed")  # the deciding answer as given; how it was decided beside it
    assert resumed["payload"] == {"approved": True} and resumed["verdict"] == "approved"
    assert resumed["responder"] == {"subject": "bob", "origin": "operator"}
    assert [(a["subject"], a["status"]) for a in resumed["approvals"]] == [("ann", "approved"), ("bob", "approved")]
    assert len(h.events("session.interrupt_resumed")) == 1
    late = h.resume("int-ok", {"approved": True}, caller=CID)
    assert late.noop is True and late.cleared is not None and (late.cleared.subject, late.cleared.origin) == (
        "bob", "operator")
    assert h.resume("int-ok", {"approved": True}, caller=ANN).cleared == replace(late.cleared, same_payload=True)


def test_a2_the_first_denial_resolves_as_denied_unless_the_policy_says_otherwise() -> None:
    h = board()
    h.resume("int-ok", {"approved": True}, caller=ANN)
    out = h.resume("int-ok", {"approved": False}, caller=BOB)
    assert out == Resumed("int-ok", noop=False)
    [resumed] = h.triggers("interrupt.resumed")
    assert (resumed["verdict"], resumed["payload"]) == ("denied", {"approved": False})
    assert resumed["responder"] == {"subject": "bob", "origin": "operator"}
    # With deny_resolves false a denial is recorded and the interrupt waits for the quorum.
    h = board({**BOARD, "deny_resolves": False})
    assert h.resume("int-ok", {"status": "cancelled", "payload": None}, caller=ANN).progress is not None
    assert h.resume("int-ok", {"approved": True}, caller=BOB).progress is not None
    assert h.resume("int-ok", {"approved": True}, caller=CID).noop is False
    [resumed] = h.triggers("interrupt.resumed")
    assert [a["status"] for a in resumed["approvals"]] == ["cancelled", "approved", "approved"]


def test_a2_an_escalated_interrupt_admits_its_escalation_approvers() -> None:
    h = board({"subjects": ["ann"], "escalate_to": {"subjects": ["boss"]}})
    assert h.open_interrupt()["escalate_to"] == {"subjects": ["boss"]}
    assert "policy" in h.open_interrupt() and "escalate_to" not in h.open_interrupt()["policy"]
    boss = Caller("t1", "boss", "operator")
    assert refused(h, boss, True).code == "not_an_approver"
    from holdpoint.aws.store import session_pk

    assert h.session_id
    state = h.state()
    state.interrupts["int-ok"].escalated = True  # what the escalation timer sets
    state.touch(state.interrupts["int-ok"])
    h.store.commit(state)
    assert h.store.read_interrupt("t1", h.session_id, "int-ok").escalated  # type: ignore[union-attr]
    assert session_pk("t1", h.session_id)
    assert h.resume("int-ok", {"approved": True}, caller=boss).noop is False


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a2_an_approver_who_loses_the_race_decides_again_on_what_won() -> None:
    """Ann and Bob both read the interrupt with no answer; Ann's answer lands first, so Bob's write
    (conditioned on the count he read) fails, and Bob decides again on Ann's: the quorum is met."""
    h = board()
    tokens = spent_tokens(h)
    assert h.session_id
    stale = h.store.read_interrupt("t1", h.session_id, "int-ok")
    h.resume("int-ok", {"approved": True}, caller=ANN)
    read = h.store.read_interrupt
    h.store.read_interrupt = lambda *a: stale  # type: ignore[method-assign,assignment,return-value]
    calls = dynamodb_calls(h)
    out = resume(h.store, h.parking, BOB, h.session_id, "int-ok", {"approved": True})
    h.store.read_interrupt = read  # type: ignore[method-assign]
    assert out == Resumed("int-ok", noop=False)
    # the lost write, then the resolve, then the task token read after it
    assert calls == ["UpdateItem", "UpdateItem", "GetItem"] and len(tokens) == 1
    found = h.store.read_interrupt("t1", h.session_id, "int-ok")
    assert found is not None and found.status == "resolved"
    assert [a.subject for a in found.approvals] == ["ann", "bob"]
    # A loser whose own answer is already there (a retried request) is told so.
    h2 = board()
    assert h2.session_id
    stale = h2.store.read_interrupt("t1", h2.session_id, "int-ok")
    h2.resume("int-ok", {"approved": True}, caller=ANN)
    h2.store.read_interrupt = lambda *a: stale  # type: ignore[method-assign,assignment,return-value]
    again = resume(h2.store, h2.parking, ANN, h2.session_id, "int-ok", {"approved": True})
    assert again.noop is True and again.answered is not None and again.answered.same_payload is True


def test_a2_an_interrupt_without_a_policy_resumes_as_before_and_records_the_answer() -> None:
    h = Harness(asking(None, log := []))
    h.log = log
    h.say("Email Bob")
    assert "policy" not in h.open_interrupt() and h.open_interrupt()["requester"] == "key:user-1"
    assert h.resume("int-ok", {"approved": True}) == Resumed("int-ok", noop=False)
    [resumed] = h.triggers("interrupt.resumed")
    assert resumed["payload"] == {"approved": True}
    found = h.store.read_interrupt("t1", h.session_id or "", "int-ok")
    assert found is not None and [a.subject for a in found.approvals] == ["user-1"]


def test_a2_answers_to_a_quorum_are_small() -> None:
    h = board()
    err = refused(h, ANN, {"approved": True, "note": "x" * approvals.MAX_QUORUM_ANSWER_BYTES})
    assert (err.code, err.param) == ("payload_too_large", "payload")


# --- groups -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a2_groups_come_from_an_api_key_attribute_and_a_client_token_claim() -> None:
    from holdpoint.admin import main
    from holdpoint.aws.keys import put_api_key
    from holdpoint.http.credentials import authenticate, caller_of, context_of
    from holdpoint.services.caller import Caller as C
    from holdpoint.services.tokens import mint_client_token

    h = Harness()
    put_api_key("holdpoint", "hp_finance", "t1", "ann", "operator", groups=["finance", "ops"])
    caller = authenticate("Bearer hp_finance", h.store, lambda: None)
    assert caller is not None and caller.groups == ("finance", "ops")
    assert caller_of(context_of(caller)) == caller
    put_api_key("holdpoint", "hp_plain", "t1", "bob", "operator")
    assert authenticate("Bearer hp_plain", h.store, lambda: None).groups == ()  # type: ignore[union-attr]
    token = mint_client_token("s" * 32, "t1", "zoe", groups=["finance"])
    caller = authenticate(f"Bearer {token}", h.store, lambda: "s" * 32)
    assert caller is not None and caller.groups == ("finance",)
    assert caller_of({"tenant": "t1", "groups": "not json"}).groups == ()
    # POST /v1/client-tokens: `identity.groups` become the token's `groups` claim.
    from holdpoint.services import tokens

    minter = C("t1", "backend", "machine")
    issued = tokens.issue(h.store, lambda: "s" * 32, minter, "zoe", ttl_seconds=900, groups=["legal"])
    assert authenticate(f"Bearer {issued['token']}", h.store, lambda: "s" * 32).groups == ("legal",)  # type: ignore[union-attr]
    assert main(["create-key", "--table", "holdpoint", "--tenant", "t1", "--subject", "cid", "--groups",
                 "finance, legal"]) == 0


# --- A6: comments -----------------------------------------------------------------------------


def test_a6_a_comment_is_recorded_with_the_answer() -> None:
    h = board()
    assert h.session_id
    out = resume(h.store, h.parking, ANN, h.session_id, "int-ok", {"approved": True}, comment="looks right")
    assert out.progress is not None
    [recorded] = h.open_interrupt()["approvals"]
    assert recorded["comment"] == "looks right"
    resume(h.store, h.parking, BOB, h.session_id, "int-ok", {"approved": False}, comment="not to Bob")
    h.wake("int-ok", "resumed")
    [resumed] = h.triggers("interrupt.resumed")
    assert [a["comment"] for a in resumed["approvals"]] == ["looks right", "not to Bob"]
    err = refused(h, CID, True, comment="x" * (answers.MAX_COMMENT + 1))
    assert err.param == "comment"


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
@pytest.mark.usefixtures("handlers")
def test_a6_both_resume_routes_bound_the_comment_and_record_it() -> None:
    h = Harness(asking(), tenant="dev")
    sid = start_session(h)
    before = table_items()
    long = "x" * (answers.MAX_COMMENT + 1)
    for body in ({"payload": True, "comment": long}, {"payload": True, "comment": 7}):
        status, out = call_resume(sid, "int-ok", body)
        assert status == 400 and out["error"]["param"] == "comment", out
        status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts/int-ok/resume", body)
        assert status == 400 and out["error"]["param"] == "comment", out
        status, out = call_api("POST", f"/v1/sessions/{sid}/inputs",
                               {"type": "interrupt.resume", "interrupt_id": "int-ok", **body})
        assert status == 400 and out["error"]["param"] == "comment", out
    assert table_items() == before
    status, out = call_resume(sid, "int-ok", {"payload": True, "comment": "fine by me"})
    assert (status, out) == (200, {"ok": True, "interrupt_id": "int-ok", "noop": False})
    found = h.store.read_interrupt("dev", sid, "int-ok")
    assert found is not None and found.approvals[0].comment == "fine by me"


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
@pytest.mark.usefixtures("handlers")
def test_a2_both_resume_routes_answer_403_not_an_approver() -> None:
    h = Harness(asking(), tenant="dev", agent={"approval": {"subjects": ["ann", "bob"], "quorum": 2}})
    sid = start_session(h)
    before = table_items()
    status, out = call_resume(sid, "int-ok", {"payload": {"approved": True}})
    assert status == 403 and out["error"]["code"] == "not_an_approver" and "dev-user" in out["error"]["message"]
    status, out = call_api("POST", f"/v1/sessions/{sid}/inputs",
                           {"type": "interrupt.resume", "interrupt_id": "int-ok", "payload": {"approved": True}})
    assert status == 403 and out["error"]["code"] == "not_an_approver"
    assert table_items() == before
    event = http_event("POST", f"/v1/sessions/{sid}/interrupts/int-ok/resume", {"payload": {"approved": True}},
                       route_key="POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume",
                       path_params={"session_id": sid, "interrupt_id": "int-ok"}, subject="ann")
    from tests.unit.test_api import CONTEXT, RESUME

    status, out = parse(RESUME.handler(event, CONTEXT))
    assert status == 200 and out["status"] == "open" and out["approvals"] == 1


def test_a2_a_budget_stop_is_the_operators_whatever_the_agent_policy() -> None:
    """A system hold (R4, §4.7) is not an approval: the agent's approver policy does not apply."""
    from holdpoint.core import budget, interrupts
    from holdpoint.core.state import Header, SessionState

    state = SessionState(header=Header(tenant="t1", session_id="s", agent_id="a",
                                       agent_item={"approval": {"subjects": ["ann"], "origins": ["client"]}}))
    raised = interrupts.raise_interrupt(state, interrupt_id=None, reason=budget.REASON, payload=None,
                                        origin="system", anchor=None, expires_in=None, call_id=None, turn_id=None,
                                        raised_by="budget:x")
    assert raised is not None and raised.policy is None
    with pytest.raises(PolicyError) as info:
        interrupts.raise_interrupt(state, interrupt_id=None, reason="hold", payload=None, origin="operator",
                                   anchor=None, expires_in=None, call_id=None, turn_id=None, raised_by="api:y")
    assert info.value.param == "origins"


def test_a2_a_malformed_policy_a_worker_puts_in_force_fails_its_answer_naming_the_field() -> None:
    """A worker may replace the config in force (`agent` in its answer); the config is checked on
    arrival as `PUT /v1/agents` checks a declaration, so a policy that cannot be used fails the
    answer, naming the field, and the config in force stays as declared."""
    for bad in ({"quorum": "two"}, {"subjects": "ann"}, {"quorum": 0}, ["ann"], {"escalate_to": ["boss"]}):
        def decide(req: dict[str, Any], bad: Any = bad) -> dict[str, Any]:
            proposed: dict[str, Any] = req["proposed"]
            if req["trigger"]["type"] == "session.start":
                return {**proposed, "agent": {**proposed["agent"], "approval": bad}}
            return proposed

        h = Harness(decide)
        h.say("Email Bob")
        [failed] = h.events("decision.failed")
        assert failed["data"]["error"]["param"].startswith("agent.approval"), failed
        assert h.state().header.config().approval is None
    declared = AgentConfig.model_validate({"approval": {"quorum": 2},
                                           "tools": [{"name": "t", "approval": {"groups": ["g"]}}]})
    assert policy_of(declared.approval_for("t")) == Policy(groups=("g",))
    assert AgentConfig.model_validate({"tools": [{"name": "t"}]}).approval_for("t") is None


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a2_an_approver_beaten_every_round_gets_409_conflict_and_nothing_of_theirs_is_recorded() -> None:
    """Each time Bob's write is about to land, another member's answer lands first (a real
    conditional failure): after ROUNDS tries Bob is told 409 `conflict`, and a retry records him."""
    from holdpoint.aws.ddb.expr import Update
    from holdpoint.core.interrupts import Checked
    from holdpoint.services import resume as resume_service

    h = board({"groups": ["board"], "quorum": 5})
    assert h.session_id
    sid = h.session_id
    writes = h.store.interrupt_writes
    write = writes.answer
    others = iter(f"member-{i}" for i in range(10))

    def beaten(*args: Any, **kw: Any) -> Any:
        if kw["approval"].subject == "bob":
            now = h.store.read_interrupt("t1", sid, "int-ok")
            assert now is not None
            other = approvals.answer(next(others), "operator", given({"approved": True}), "approved", None,
                                     "2026-01-01T00:00:00.000Z", "api")
            checked = Checked(("worker", "client"), None, now.generation, len(now.approvals))
            assert write(writes.key("t1", sid, "int-ok"), Update(), checked, approval=other,
                         done="recorded")[0] == "recorded"
        return write(*args, **kw)

    writes.answer = beaten  # type: ignore[method-assign]
    bob = Caller("t1", "bob", "operator", groups=("board",))
    err = refused(h, bob, {"approved": True})
    assert (err.code, err.param) == ("conflict", "interrupt_id")
    found = h.store.read_interrupt("t1", sid, "int-ok")
    assert found is not None and [a.subject for a in found.approvals] == [
        f"member-{i}" for i in range(resume_service.ROUNDS)]
    writes.answer = write  # type: ignore[method-assign]
    assert resume(h.store, h.parking, bob, sid, "int-ok", {"approved": True}).progress == Progress(
        approvals=resume_service.ROUNDS + 1, quorum=5)
