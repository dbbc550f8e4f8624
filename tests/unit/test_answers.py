"""One verdict, failing closed (PROTOCOL.md, "One answer"): what an answer means is read once, the
same for every channel, and under an approver policy an answer that says neither approve nor deny
is refused, never counted. The pure rules; every channel's use of them is in test_answers_channels
(in process) and tests/e2e/test_answer_matrix_e2e.py (over HTTP, with the shipped seed worker)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given as for_all
from hypothesis import strategies as st

from holdpoint.core import answers, approvals
from holdpoint.core.answers import Answer, Given, OnExpiry, Responder, given, says, verdict
from holdpoint.core.errors import Refusal
from holdpoint.core.notify import link_choices
from holdpoint.core.policy import Policy
from holdpoint.core.state import Interrupt

REJECT = {"label": "Reject", "value": "reject", "approved": False}
SHIP = {"label": "Ship it", "value": {"ship": True, "approved": True}}
NOTE = {"label": "Add a note", "value": "note"}


def test_an_agui_envelope_is_unwrapped_wherever_it_arrives_and_nothing_else_is() -> None:
    assert given({"status": "resolved", "payload": {"approved": True}}) == Given({"approved": True},
                                                                                 param="payload.payload")
    assert given({"status": "cancelled"}) == Given(None, cancelled=True, param="payload.payload")
    assert given({"status": "resolved", "payload": "x", "responder": {"user": "U1"}}).payload == "x"
    expiry = {"status": "resolved", "reason": "expired", "on_expiry": "deny", "approved": False}
    assert given(expiry) == Given(expiry)  # more keys than an envelope: an answer of its own
    assert given({"approved": True}) == Given({"approved": True}) and given(None).empty
    assert not given({"status": "cancelled"}).empty  # a dismissal says something


def test_an_answer_approves_only_when_it_says_so() -> None:
    options = answers.declared_options({"metadata": {"options": [REJECT, SHIP, NOTE]}})
    assert says({"approved": True}, []) is True and says({"approved": False}, []) is False
    assert says("reject", options) is False and says({"ship": True, "approved": True}, options) is True
    assert says("note", options) is None and says("approve", []) is None and says({"approved": "yes"}, []) is None
    assert says(None, []) is None and says(True, []) is None


def test_under_a_policy_an_answer_with_no_verdict_is_refused_naming_the_payload() -> None:
    for raw in ("deny", "approve", None, {"note": "fine"}, {"approved": "yes"}, {"status": "resolved"}):
        with pytest.raises(Refusal) as refused:
            verdict(given(raw), [], under_policy=True)
        assert refused.value.code == "invalid_resume"
        assert refused.value.param == ("payload.payload" if isinstance(raw, dict) and "status" in raw else "payload")
    assert verdict(given("deny"), [], under_policy=False) == "answered"  # a plain question's answer
    assert verdict(given(None), [], under_policy=False) == "answered"


def test_a_dismissal_is_cancelled_and_a_quorum_counts_it_as_a_denial() -> None:
    assert verdict(given({"status": "cancelled"}), [], under_policy=True) == "cancelled"
    ann, bob = _answer("ann", "approved"), _answer("bob", "cancelled")
    assert approvals.decides(Policy(quorum=2), [ann, bob])
    assert not approvals.decides(Policy(quorum=2, deny_resolves=False), [ann, bob])


def test_a_quorum_counts_approvals_and_the_first_denial_decides() -> None:
    yes, no = _answer("ann", "approved"), _answer("cid", "denied")
    q2 = Policy(quorum=2)
    assert not approvals.decides(q2, [yes]) and approvals.decides(q2, [yes, _answer("bob", "approved")])
    assert approvals.decides(q2, [no]) and approvals.decides(q2, [yes, no])
    assert not approvals.decides(Policy(quorum=2, deny_resolves=False), [yes, no])
    assert approvals.decides(None, [no]) and approvals.decides(None, [yes])
    assert approvals.decides(None, [_answer("dan", "answered")])


@for_all(st.lists(st.sampled_from(["approved", "denied", "cancelled"]), min_size=1, max_size=6),
         st.integers(min_value=1, max_value=6), st.booleans())
def test_a_quorum_is_met_only_by_that_many_approvals(verdicts: list[str], quorum: int, deny_resolves: bool) -> None:
    """Whatever the order, an approval decides only with `quorum` approvals among the answers,
    and a denial decides only when denials resolve."""
    recorded = [_answer(f"s{i}", v) for i, v in enumerate(verdicts)]
    policy = Policy(quorum=quorum, deny_resolves=deny_resolves)
    approved = sum(v == "approved" for v in verdicts)
    expected = approved >= quorum or (deny_resolves and verdicts[-1] != "approved")
    assert approvals.decides(policy, recorded) is expected


def test_options_must_each_say_whether_they_approve_under_a_policy() -> None:
    assert answers.options_problem({"metadata": {"options": [REJECT, SHIP]}}) is None
    assert answers.options_problem({"metadata": {"options": [REJECT, NOTE]}}) == "payload.metadata.options[1]"
    assert answers.options_problem({"metadata": {"options": ["yes", "no"]}}) == "payload.metadata.options[0]"
    assert answers.options_problem({"message": "no options"}) is None


def test_every_channel_offers_the_same_default_answers() -> None:
    """Slack's buttons, the links and the console's buttons: Approve is `{approved: true}` and Deny
    `{approved: false}`, nothing a verdict could misread (the link keys stay `approve`/`deny`)."""
    assert [o["value"] for o in answers.options_of({})] == [{"approved": True}, {"approved": False}]
    choices = link_choices({"message": "Send the email?"})
    assert {k: v["answer"] for k, v in choices.items()} == {"approve": {"approved": True},
                                                             "deny": {"approved": False}}
    declared = link_choices({"metadata": {"options": [REJECT]}})
    assert declared["option-0"]["answer"] == {"status": "resolved", "payload": "reject"}
    assert verdict(given(declared["option-0"]["answer"]), [REJECT], under_policy=True) == "denied"


def test_an_outcome_reads_the_deciding_answer_or_the_expiry() -> None:
    closed = Interrupt("int-1", "worker", "confirm", None, "2026-01-01T00:00:00.000Z", "k", status="resolved",
                       resolution={"approved": False}, responder=Responder("cid", "operator"),
                       approvals=(replace(_answer("ann", "approved"), channel="slack"),
                                  replace(_answer("cid", "denied"), channel="link")))
    decided = approvals.outcome(closed)
    assert (decided.verdict, decided.channel, decided.expired) == ("denied", "link", False)
    assert approvals.resumed(closed)["payload"] == {"approved": False}
    assert [a["subject"] for a in approvals.resumed(closed)["approvals"]] == ["ann", "cid"]
    cases: tuple[tuple[OnExpiry | None, str], ...] = (("approve", "approved"), ("deny", "denied"), (None, "cancelled"))
    for on_expiry, expected in cases:
        gone = Interrupt("int-2", "worker", "confirm", None, "2026-01-01T00:00:00.000Z", "k", status="expired",
                         on_expiry=on_expiry)
        assert approvals.outcome(gone).verdict == expected and approvals.outcome(gone).channel == "expiry"


def _answer(subject: str, status: str) -> Answer:
    return Answer(subject, "operator", answers.as_verdict(status) or "answered", None, None,
                  "2026-01-01T00:00:00.000Z", "api")
