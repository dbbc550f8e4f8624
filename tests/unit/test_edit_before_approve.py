"""A3's edit before approve: where the approver policy allows `edit`, an approval may carry new
arguments for the bound tool call. The rules (narrowing, the tool's input schema, the quorum's
restart, the race of two editors) against the real core and stores; over HTTP on the local
stack: tests/e2e/test_edit_before_approve_e2e.py; the attacks: tests/security."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holdpoint.core import approvals, edits
from holdpoint.core.answers import Responder
from holdpoint.core.bound_action import BoundAction
from holdpoint.core.errors import PolicyError, Refusal
from holdpoint.core.policy import Policy
from holdpoint.core.protocols.approval import ApprovalPolicy
from holdpoint.core.protocols.runs import RunAnswer
from holdpoint.core.protocols.worker import InterruptResumed
from holdpoint.services import inbox
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Progress, precheck, resume
from holdpoint_local.memory.receipts import MemoryReceiptKeys
from holdpoint_sdk import cli
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.harness import TOOLS, Harness
from tests.unit.test_approver_policies import asking, narrowed, refused
from tests.unit.test_bad_input import FUZZ_EXAMPLES
from tests.unit.test_cli import Canned
from tests.unit.test_engine_features import fire_deadline

pytestmark = pytest.mark.usefixtures("memory")

ANN, BOB, CID = (Caller("t1", s, "operator") for s in ("ann", "bob", "cid"))
EDITABLE = {"subjects": ["ann", "bob", "cid"], "edit": True}
BOARD = {**EDITABLE, "quorum": 2}
YES = {"approved": True}
SCHEMA = TOOLS[0]["input"]


def parked(policy: dict[str, Any], interrupt: dict[str, Any] | None = None, **agent: Any) -> Harness:
    """A session parked on send_email({"to": "bob"}) under the agent policy `policy`."""
    log: list[dict[str, Any]] = []
    h = Harness(asking(interrupt, log), agent={"approval": policy, **agent})
    h.log = log
    h.say("Email Bob")
    return h


def answer(h: Harness, caller: Caller, payload: Any = YES, **kw: Any) -> Any:
    assert h.session_id
    out = resume(h.store, h.parking, caller, h.session_id, "int-ok", payload, **kw)
    if out.decided:
        h.wake("int-ok", "resumed")
    return out


def fingerprint(h: Harness) -> str:
    return str(h.open_interrupt()["action"]["fingerprint"])


# --- the pure rules ---------------------------------------------------------------------------


def test_edit_before_approve_narrowing_may_turn_edit_off_never_on() -> None:
    assert narrowed({"edit": True}, {"edit": False}) == {"edit": False}
    assert narrowed({"edit": True, "subjects": ["ann"]}, {"quorum": 1}) == {"edit": True, "subjects": ["ann"],
                                                                            "quorum": 1}
    assert narrowed({"edit": True}, {"edit": True}) == {"edit": True}
    for base in (None, {}, {"subjects": ["ann"]}, {"edit": False}):  # fail closed: only the policy in force allows
        with pytest.raises(PolicyError) as info:
            narrowed(base, {"edit": True})
        assert info.value.param == "edit" and "does not allow edits" in str(info.value)
    assert not Policy().allows_edit and not Policy(edit=False).allows_edit and Policy(edit=True).allows_edit
    assert Policy.from_item({"edit": True}).to_item() == {"edit": True}
    with pytest.raises(ValueError, match="edit"):
        Policy.from_item({"edit": "yes"})
    with pytest.raises(ValueError, match="edit"):
        ApprovalPolicy.model_validate({"edit": "true"})  # strict: a boolean, not a string
    assert ApprovalPolicy.model_validate({"edit": True}).frozen() == Policy(edit=True)


def test_edit_before_approve_core_checks_the_edit_against_the_tool_input_schema() -> None:
    action = BoundAction.of("send_email", '{"to": "bob"}', {"tools": TOOLS})
    allows = Policy(edit=True)
    after = edits.edited(action, allows, SCHEMA, {"to": "carol"}, "approved")
    assert after is not None and after.fingerprint != action.fingerprint
    assert after == BoundAction.of("send_email", '{"to":"carol"}', {"tools": TOOLS})  # the binding's own digest
    assert (after.tool, after.agent_version, json.loads(after.arguments)) == ("send_email", action.agent_version,
                                                                               {"to": "carol"})
    assert edits.edited(action, allows, SCHEMA, {"to": "bob"}, "approved") is None  # the same arguments: no edit
    cases: list[tuple[Any, ...]] = [
        (None, allows, {"to": "x"}, "approved", "invalid_resume", "arguments"),
        (action, None, {"to": "x"}, "approved", "edit_not_allowed", "arguments"),
        (action, Policy(subjects=("ann",)), {"to": "x"}, "approved", "edit_not_allowed", "arguments"),
        (action, allows, {"to": "x"}, "denied", "invalid_resume", "arguments"),
        (action, allows, {"to": "x"}, "cancelled", "invalid_resume", "arguments"),
        (action, allows, ["x"], "approved", "invalid_resume", "arguments"),
        (action, allows, {"to": 5}, "approved", "invalid_resume", "arguments.to"),
        (action, allows, {"cc": "x"}, "approved", "invalid_resume", "arguments"),  # `to` is required
        (action, allows, {"to": "x" * edits.MAX_EDIT_BYTES}, "approved", "payload_too_large", "arguments"),
    ]
    for bound, policy, arguments, verdict, code, param in cases:
        with pytest.raises(Refusal) as info:
            edits.edited(bound, policy, SCHEMA, arguments, verdict)
        assert (info.value.code, info.value.param) == (code, param), (arguments, verdict, info.value.message)
    closed = {**SCHEMA, "additionalProperties": False}
    with pytest.raises(Refusal, match="bcc"):
        edits.edited(action, allows, closed, {"to": "x", "bcc": "mallory"}, "approved")
    assert edits.edited(action, allows, None, {"anything": [1]}, "approved") is not None  # no schema: any object
    kept = edits.Edit(action, action, Responder("ann", "operator"), "t", 0)
    with pytest.raises(Refusal, match="edited 10 times"):
        edits.edited(action, allows, SCHEMA, {"to": "x"}, "approved", [kept] * edits.MAX_EDITS)
    big = edits.Edit(action, action.with_arguments({"to": "x" * 16_000}), Responder("ann", "operator"), "t", 0)
    with pytest.raises(Refusal, match="in all") as info:  # each edit small, all of them together bounded
        edits.edited(action, allows, SCHEMA, {"to": "y" * 16_000}, "approved", [big] * 4)
    assert (info.value.code, info.value.param) == ("payload_too_large", "arguments")


# --- the resume -------------------------------------------------------------------------------


def test_edit_before_approve_an_edited_approval_reaches_the_worker_with_the_new_fingerprint() -> None:
    h = parked(EDITABLE)
    raised = h.open_interrupt()["action"]
    assert h.state().interrupts["int-ok"].edit_schema == SCHEMA  # kept at the raise, as the policy allows edits
    out = answer(h, ANN, expect_fingerprint=raised["fingerprint"], arguments={"to": "carol"})
    assert out.decided and out.edited is not None and out.edited.replaces == raised["fingerprint"]
    [resumed] = h.triggers("interrupt.resumed")
    edit = resumed["edit"]
    assert edit["arguments"] == {"to": "carol"} and edit["by"] == {"subject": "ann", "origin": "operator"}
    assert edit["action"]["fingerprint"] == out.edited.fingerprint != raised["fingerprint"]
    assert edit["original"] == raised and resumed["verdict"] == "approved"
    closed = h.state().interrupts["int-ok"]
    assert closed.action is not None and closed.action.fingerprint == out.edited.fingerprint
    audit = inbox.closed_fields(closed) | closed.view()
    [kept] = audit["edits"]
    assert kept["original"] == raised and kept["action"]["fingerprint"] == out.edited.fingerprint
    assert kept["by"]["subject"] == "ann" and kept["restart"] == 0


def test_edit_before_approve_is_refused_where_the_policy_allows_none_and_records_nothing() -> None:
    h = parked({"subjects": ["ann"]})
    assert h.state().interrupts["int-ok"].edit_schema is None
    before = h.store.read_interrupt("t1", h.session_id or "", "int-ok")
    err = refused(h, ANN, YES, arguments={"to": "carol"})
    assert (err.code, err.param) == ("edit_not_allowed", "arguments")
    assert h.store.read_interrupt("t1", h.session_id or "", "int-ok") == before
    # An interrupt may turn edits off where the agent allows them.
    h = parked(EDITABLE, interrupt={"edit": False})
    assert refused(h, ANN, YES, arguments={"to": "carol"}).code == "edit_not_allowed"
    # ...and may not turn them on where the agent does not: the worker's interrupt fails its decision.
    h = parked({"subjects": ["ann"]}, interrupt={"edit": True})
    assert not h.view()["interrupts"]


def test_edit_before_approve_a_quorum_restarts_its_count_and_refuses_the_stale_fingerprint() -> None:
    h = parked(BOARD)
    original = fingerprint(h)
    assert answer(h, ANN).progress == Progress(approvals=1, quorum=2)
    out = answer(h, BOB, arguments={"to": "carol"}, expect_fingerprint=original)
    assert out.progress == Progress(approvals=1, quorum=2)  # Bob's approval of the edit alone counts
    assert out.edited is not None and out.edited.superseded == 1 and out.edited.replaces == original
    edited = fingerprint(h)
    assert edited == out.edited.fingerprint and h.open_interrupt()["waiting_for"]["approvals"] == 1
    stale = refused(h, ANN, YES, expect_fingerprint=original)
    assert stale.code == "stale_approval" and stale.extra["fingerprint"] == edited
    assert answer(h, ANN, expect_fingerprint=edited).decided  # Ann's earlier answer no longer stands
    [resumed] = h.triggers("interrupt.resumed")
    assert [(a["subject"], a["status"]) for a in resumed["approvals"]] == [("bob", "approved"), ("ann", "approved")]
    assert resumed["edit"]["arguments"] == {"to": "carol"}
    found = h.store.read_interrupt("t1", h.session_id or "", "int-ok")
    assert found is not None and [a.subject for a in found.approvals] == ["ann", "bob", "ann"]  # the audit keeps all
    assert [a.subject for a in approvals.standing(found)] == ["bob", "ann"]


def test_edit_before_approve_a_second_edit_restarts_again_and_keeps_the_chain() -> None:
    h = parked({**BOARD, "quorum": 3})
    first = fingerprint(h)
    answer(h, ANN, arguments={"to": "carol"})
    second = fingerprint(h)
    out = answer(h, BOB, arguments={"to": "dave"})
    assert out.progress == Progress(approvals=1, quorum=3) and out.edited is not None
    assert out.edited.replaces == second and out.edited.superseded == 1
    answer(h, ANN)
    assert answer(h, CID).decided
    [resumed] = h.triggers("interrupt.resumed")
    assert resumed["edit"]["original"]["fingerprint"] == first and resumed["edit"]["arguments"] == {"to": "dave"}
    chain = h.state().interrupts["int-ok"].edits
    assert [(e.original.fingerprint, e.by.subject, e.restart) for e in chain] == [(first, "ann", 0), (second, "bob", 1)]


@pytest.mark.usefixtures("aws")  # the conditional writes of the DynamoDB store on moto
def test_edit_before_approve_of_two_racing_editors_one_wins_the_other_is_refused() -> None:
    """Ann and Bob both read the unedited interrupt; Ann's edit lands first, so Bob's write (on the
    count he read) fails, and deciding again he finds another action: 409 naming its fingerprint."""
    h = parked(BOARD)
    assert h.session_id
    stale = h.store.read_interrupt("t1", h.session_id, "int-ok")
    answer(h, ANN, arguments={"to": "carol"})
    won = fingerprint(h)
    read = h.store.read_interrupt
    h.store.read_interrupt = lambda *a: stale  # type: ignore[method-assign,assignment,return-value]
    err = refused(h, BOB, YES, arguments={"to": "dave"})
    plain = refused(h, CID, YES)  # a plain approval of the action it read is refused alike, never counted for the edit
    h.store.read_interrupt = read  # type: ignore[method-assign]
    assert (err.code, err.extra["fingerprint"], plain.code) == ("stale_approval", won, "stale_approval")
    found = h.store.read_interrupt("t1", h.session_id, "int-ok")
    assert found is not None and [(e.by.subject) for e in found.edits] == ["ann"]
    assert [a.subject for a in found.approvals] == ["ann"] and found.status == "open"
    assert json.loads(found.action.arguments if found.action else "") == {"to": "carol"}
    # The edits survive the engine rewriting the record (the wake), as the item keeps them apart.
    assert answer(h, BOB, expect_fingerprint=won).decided
    closed = h.store.read_interrupt("t1", h.session_id, "int-ok")
    assert closed is not None and closed.woken and closed.edits == found.edits and closed.action == found.action


def test_edit_before_approve_the_receipt_is_over_the_edited_action() -> None:
    h = parked(EDITABLE)
    keys = MemoryReceiptKeys()
    h.runner.receipts = keys
    raised = h.open_interrupt()["action"]
    answer(h, ANN, arguments={"to": "carol"})
    [resumed] = h.triggers("interrupt.resumed")
    claims = verify_receipt(resumed["receipt"], {"tool": "send_email", "arguments": resumed["edit"]["arguments"]},
                            keys.jwks())
    assert claims["action"]["fingerprint"] == resumed["edit"]["action"]["fingerprint"]  # type: ignore[index]
    with pytest.raises(ReceiptRefused, match="other arguments"):
        verify_receipt(resumed["receipt"], {"tool": "send_email", "arguments": raised["arguments"]}, keys.jwks())


def test_edit_before_approve_unchanged_arguments_are_a_plain_approval() -> None:
    h = parked(EDITABLE)
    raised = fingerprint(h)
    out = answer(h, ANN, arguments={"to": "bob"})
    assert out.decided and out.edited is None
    [resumed] = h.triggers("interrupt.resumed")
    assert "edit" not in resumed and h.state().interrupts["int-ok"].action.fingerprint == raised  # type: ignore[union-attr]


def test_edit_before_approve_a_second_answer_by_the_same_approver_may_not_edit() -> None:
    """An approver whose answer stands gets a no-op for a repeat (idempotent retries, with no
    arguments or the action's own), but a repeat that carries other arguments is refused 409
    naming `arguments`, recording nothing, where a no-op would drop the edit without a word.
    Another approver may still edit, which restarts the count."""
    h = parked(BOARD)
    assert h.session_id
    assert answer(h, ANN).progress == Progress(approvals=1, quorum=2)
    assert answer(h, ANN).noop and answer(h, ANN, arguments={"to": "bob"}).noop  # retries stay no-ops
    before = h.store.read_interrupt("t1", h.session_id, "int-ok")
    err = refused(h, ANN, YES, arguments={"to": "carol"})
    assert (err.code, err.param) == ("conflict", "arguments") and "already answered" in err.message
    with pytest.raises(Refusal) as info:  # the AG-UI route checks every entry first: the same refusal
        precheck(h.store, ANN, h.session_id, "int-ok", YES, {"to": "carol"})
    assert (info.value.code, info.value.param) == ("conflict", "arguments")
    assert h.store.read_interrupt("t1", h.session_id, "int-ok") == before
    out = answer(h, BOB, arguments={"to": "carol"})  # another approver's edit restarts the count
    assert out.progress == Progress(approvals=1, quorum=2) and out.edited is not None
    assert answer(h, BOB, arguments={"to": "carol"}).noop  # the editor's retry of the edit is a no-op
    assert refused(h, BOB, YES, arguments={"to": "dave"}).code == "conflict"
    assert answer(h, ANN, expect_fingerprint=out.edited.fingerprint).decided  # Ann's answer no longer stood
    [resumed] = h.triggers("interrupt.resumed")
    assert resumed["edit"]["arguments"] == {"to": "carol"}


# --- the bound call runs the edit --------------------------------------------------------------


def deferring(log: list[dict[str, Any]]) -> Any:
    """A worker that asks before its first attempt at every tool, takes the call on its resume
    without settling it (so the call waits under its deadline), and answers a retry with a result."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        log.append(req)
        t = req["trigger"]
        if t["type"] == "tool.execute" and t["attempt"] == 1:
            return {"actions": [{"type": "interrupt", "interrupt_id": "int-ok", "reason": "approve"}]}
        if t["type"] == "tool.execute":
            return {"actions": [{"type": "tool.result", "result": "sent"}]}
        if t["type"] == "interrupt.resumed":
            return {}
        return dict(req["proposed"])

    return decide


def held(policy: dict[str, Any]) -> Harness:
    """A session parked on send_email({"to": "bob"}) by `deferring`, two attempts a tool call."""
    log: list[dict[str, Any]] = []
    h = Harness(deferring(log), agent={"approval": policy, "retry": {"tool": {"max_attempts": 2}}})
    h.log = log
    h.say("Email Bob")
    return h


def retried(h: Harness) -> dict[str, Any]:
    """The open send_email call's deadline fires: its second attempt's `tool.execute`."""
    [call] = [c for c in h.state().calls.values() if c.kind == "tool_call" and c.status == "open"]
    assert call.deadline_at is not None  # armed once the worker answered `interrupt.resumed`
    fire_deadline(h, call)
    [first, second] = h.triggers("tool.execute")
    assert (first["attempt"], second["attempt"]) == (1, 2)
    return second


def test_edit_before_approve_a_deadline_retry_runs_the_edited_arguments() -> None:
    h = held(EDITABLE)
    raised = h.open_interrupt()["action"]
    answer(h, ANN, arguments={"to": "carol"})
    [call] = h.view()["calls"]  # the session view lists the call as it runs now
    assert json.loads(call["arguments"]) == {"to": "carol"}
    execute = retried(h)
    assert json.loads(execute["arguments"]) == {"to": "carol"}
    assert execute["input"] == {"status": "valid", "value": {"to": "carol"}}
    closed = h.state().interrupts["int-ok"]  # the audit keeps the action as raised and the edit
    assert [(e.original, e.action.fingerprint) for e in closed.edits] == [
        (BoundAction.from_item(raised), closed.action.fingerprint if closed.action else "")]
    assert json.loads(closed.edits[0].original.arguments) == {"to": "bob"}
    assert h.view()["messages"][-1]["content"] == "Email sent."


def test_edit_before_approve_without_an_approved_edit_the_call_keeps_its_arguments() -> None:
    h = held(EDITABLE)
    asked = h.state().calls
    [before] = [c.arguments for c in asked.values() if c.kind == "tool_call"]
    answer(h, ANN, arguments={"to": "bob"})  # the action's own arguments: no edit
    assert retried(h)["arguments"] == before and json.loads(before or "") == {"to": "bob"}
    # An edit a denial then decides runs nothing, so the call keeps the arguments it was asked with.
    h = held(BOARD)
    answer(h, ANN, arguments={"to": "carol"})
    assert answer(h, BOB, {"approved": False}).decided
    [call] = [c for c in h.state().calls.values() if c.kind == "tool_call"]
    assert json.loads(call.arguments or "") == {"to": "bob"} and h.state().interrupts["int-ok"].edits


def test_edit_before_approve_cli_sends_the_edit_and_says_the_count_restarted() -> None:
    path = "/v1/sessions/sess-1/interrupts/int-1/resume"
    reply = {"ok": True, "interrupt_id": "int-1", "noop": False, "status": "open", "approvals": 1, "quorum": 2,
             "edit": {"fingerprint": "f1", "replaces": "f0", "restarted": True, "superseded": 1}}
    item = {"session_id": "sess-1", "interrupt_id": "int-1", "action": {"tool": "send_email", "fingerprint": "f1"},
            "edits": [{"by": {"subject": "ann"}, "at": "2026-01-01T00:00:00Z"}]}
    client = Canned({("POST", path): reply, ("GET", "/v1/interrupts"): {"interrupts": [item], "next_cursor": None}})
    out = io.StringIO()
    assert cli.main(["approve", "sess-1", "int-1", "--fingerprint", "f0", "--arguments", '{"to": "carol"}'],
                    client=client, stdout=out) == 0
    assert client.calls[-1][2] == {"payload": {"approved": True}, "expect_fingerprint": "f0",
                                   "arguments": {"to": "carol"}}
    assert out.getvalue().splitlines() == ["approved int-1 in sess-1", "with your edit: fingerprint f1 (replaces f0)",
                                           "the count restarted: 1 earlier approval(s) no longer count",
                                           "1 of 2 approvals"]
    shown = io.StringIO()
    assert cli.main(["show", "int-1"], client=client, stdout=shown) == 0
    assert "by ann at 2026-01-01T00:00:00Z (1 edit(s))" in shown.getvalue()
    err = io.StringIO()
    assert cli.main(["approve", "sess-1", "int-1", "--arguments", "{"], client=client, stdout=out, stderr=err) == 1
    assert err.getvalue().startswith("error: usage: --arguments is not valid JSON") and len(client.calls) == 2
    assert client.calls[-1][0] == "GET"  # the bad edit sent nothing


def test_edit_before_approve_the_sdk_runs_the_edited_arguments() -> None:
    """A worker's typed `interrupt.resumed` and an external run's answer both say which arguments
    to run with: the approver's edit, else the call's own."""
    h = parked(EDITABLE)
    answer(h, ANN, arguments={"to": "carol"})
    [resumed] = h.triggers("interrupt.resumed")
    typed = InterruptResumed.model_validate(resumed)
    assert typed.edit is not None and typed.arguments_for({"to": "bob"}) == {"to": "carol"}
    run = {"interrupt_id": "i", "reason": "r", "verdict": "approved"}
    assert RunAnswer.model_validate({**run, "edit": resumed["edit"]}).arguments_for({"to": "bob"}) == {"to": "carol"}
    assert RunAnswer.model_validate(run).arguments_for({"to": "bob"}) == {"to": "bob"}
    assert InterruptResumed(interrupt_id="i").arguments_for("{}") == "{}"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                   max_size=4), max_leaves=20)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(arguments=JSON, verdict=st.sampled_from(["approved", "denied", "cancelled", "answered"]),
       closed=st.booleans())
def test_edit_before_approve_any_edit_is_taken_or_refused_by_a_named_rule(arguments: Any, verdict: Any,
                                                                          closed: bool) -> None:
    """Whatever an approver sends as `arguments`, the edit is taken, is no edit, or is a `Refusal`
    naming `arguments` (never another error, which the edge would answer with a 5xx)."""
    action = BoundAction.of("send_email", '{"to": "bob"}', {"tools": TOOLS})
    schema = {**SCHEMA, "additionalProperties": False} if closed else SCHEMA
    try:
        after = edits.edited(action, Policy(edit=True), schema, arguments, verdict)
    except Refusal as refusal:
        assert refusal.param is not None and refusal.param.startswith("arguments"), refusal.message
        return
    assert verdict == "approved" and isinstance(arguments, dict)
    assert after is None or after.fingerprint == action.with_arguments(arguments).fingerprint
