"""What the console is told, so that it offers a person only what they may do, shows what is stuck
and says what was approved (issue: the answer's meaning, items 4-6): `you` and `waiting_for` on
open interrupts (the resume's own rule, one implementation), the verdict, channel and delivery of
closed ones, the "Needs attention" listing, and the question as safe Markdown. On moto's AWS with
the real engine, as the API function runs it; the pages themselves are tested in Chromium
(tests/e2e/test_console_trust_e2e.py)."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.core import attention, markdown
from holdpoint.core.errors import Refusal
from holdpoint.ports import SessionFilters
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.inbox import InboxFilters, inbox
from holdpoint.services.resume import resume
from tests.harness import Harness, seed_worker

pytestmark = pytest.mark.usefixtures("aws")

BOARD = {"subjects": ["ann", "bob", "cid"], "quorum": 2}
ANN, BOB, EVE = (Caller("t1", s, "operator") for s in ("ann", "bob", "eve"))


def parked(**agent: Any) -> Harness:
    h = Harness(agent=agent)
    h.say("Email Bob")
    return h


def listed(h: Harness, caller: Caller, status: str = "open") -> dict[str, Any]:
    [item] = inbox(h.store, signing, caller, 10, None, InboxFilters(status=status))["interrupts"]  # type: ignore[arg-type]
    return dict(item)


def test_a_caller_the_policy_refuses_is_told_so_with_the_resumes_own_reason() -> None:
    h = parked(approval=BOARD)
    iid = h.open_interrupt()["interrupt_id"]
    item = listed(h, EVE)
    assert item["you"]["may_answer"] is False
    with pytest.raises(Refusal) as refused:
        resume(h.store, h.parking, EVE, h.session_id or "", iid, {"approved": True})
    assert item["you"]["why"] == refused.value.message  # the same rule, the same words
    assert listed(h, ANN)["you"] == {"may_answer": True, "why": None}
    assert item["waiting_for"] == {"approvals": 2, "subjects": ["ann", "bob", "cid"], "groups": []}


def test_an_approver_who_answered_is_told_their_answer_stands_and_who_is_left() -> None:
    h = parked(approval=BOARD)
    iid = h.open_interrupt()["interrupt_id"]
    resume(h.store, h.parking, ANN, h.session_id or "", iid, {"approved": True})
    mine = listed(h, ANN)
    assert mine["you"]["may_answer"] is False and mine["you"]["answered"]["status"] == "approved"
    assert mine["waiting_for"] == {"approvals": 1, "subjects": ["bob", "cid"], "groups": []}
    assert listed(h, BOB)["you"]["may_answer"] is True
    view = sessions.view(h.store, ANN, h.session_id or "")  # the session page is told the same
    assert view["interrupts"][0]["you"] == mine["you"]


def test_a_closed_interrupt_says_its_verdict_channel_and_whether_the_worker_has_it() -> None:
    h = parked()
    iid = h.open_interrupt()["interrupt_id"]
    resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    waiting = listed(h, h.caller, "resolved")
    assert (waiting["verdict"], waiting["channel"], waiting["delivery"]) == ("approved", "api", "waiting")
    h.wake(iid, "resumed")
    done = listed(h, h.caller, "resolved")
    assert done["delivery"] == "delivered" and done["resolution"] == {"approved": True}


def test_an_answer_to_a_branch_the_session_left_has_nothing_to_deliver() -> None:
    h = parked()
    iid = h.open_interrupt()["interrupt_id"]
    first = h.view()["messages"][0]
    h.view_input([{"id": first["id"], "role": "user", "content": first["content"]},
                  {"role": "user", "content": "say hi instead"}])  # R11: branch away from the parked head
    resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    h.wake(iid, "resumed")
    assert listed(h, h.caller, "resolved")["delivery"] == "none"


class Down:
    """An in-process worker that answers with something that is not an object while `down`."""

    def __init__(self) -> None:
        self.down = False
        self.seed = seed_worker()

    def __call__(self, request: dict[str, Any]) -> Any:
        return [] if self.down else self.seed(request)


def test_a_session_whose_worker_is_down_needs_attention_until_a_delivery_succeeds() -> None:
    worker = Down()
    h = Harness(worker)
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    worker.down = True
    resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    h.wake(iid, "resumed")
    page = sessions.listing(h.store, signing, h.caller, 10, None, SessionFilters(attention=True))
    [row] = page["sessions"]
    assert row["session_id"] == h.session_id and row["attention"]["kind"] == "retrying"
    assert "not an object" in row["attention"]["reason"] and row["attention"]["advice"]
    end_user = Caller("t1", "user-1", "client", own_only=True)
    assert "not an object" not in str(sessions.listing(h.store, signing, end_user, 10, None,
                                                       SessionFilters(attention=True)))
    assert sessions.listing(h.store, signing, h.caller, 10, None, SessionFilters())["sessions"][0].get(
        "attention") is None  # the plain listing does not carry it
    worker.down = False
    h.settle()
    state = h.state()
    for decision in state.pending_decisions():  # the retry's timer, fired now
        decision.not_before = None
        state.touch(decision)
    h.store.commit(state)
    h.settle()
    assert h.view()["status"] == "done"
    assert sessions.listing(h.store, signing, h.caller, 10, None, SessionFilters(attention=True))["sessions"] == []
    assert listed(h, h.caller, "resolved")["delivery"] == "delivered"


@pytest.mark.parametrize(("reason", "says"), [
    ("worker answered HTTP 401", "HOLDPOINT_WORKER_SECRET"),
    ("worker.secret env:HOLDPOINT_X_WORKER_SECRET is not set", "cannot be read here"),
    ("worker unreachable: Connection refused", "is it running"),
    ("worker answered HTTP 502", "server error"),
])
def test_advice_names_what_to_do_about_a_failed_delivery(reason: str, says: str) -> None:
    assert says in attention.advice(reason)


def test_a_question_is_read_as_a_safe_subset_of_markdown() -> None:
    blocks = markdown.blocks("**Refund** $40, see [policy](https://x.example/p)\n\n- one\n- *two*")
    assert blocks == [{"p": [{"b": ["Refund"]}, " $40, see ", {"a": ["policy"], "href": "https://x.example/p"}]},
                      {"ul": [["one"], [{"i": ["two"]}]]}]


@pytest.mark.parametrize("evil", [
    "[x](javascript:alert(1))", "[x](http://plain.example/)", "[x](data:text/html,<b>)", "[x](//host.example/)",
    "[x](https:alert(1))", "[x](HTTPS://)"])
def test_a_link_that_is_not_https_is_only_its_text(evil: str) -> None:
    [block] = markdown.blocks(evil)
    assert "href" not in str(block) or all(
        part.get("href", "https://").startswith("https://") and "alert" not in part.get("href", "")
        for part in block["p"] if isinstance(part, dict))  # type: ignore[union-attr]


def test_raw_html_stays_text() -> None:
    [block] = markdown.blocks('<img src=x onerror=alert(1)> <script>alert(1)</script> <a href="https://e">e</a>')
    assert block == {"p": ['<img src=x onerror=alert(1)> <script>alert(1)</script> <a href="https://e">e</a>']}


def test_every_console_item_says_the_question_as_blocks() -> None:
    assembly.reset()
    h = parked()
    item = listed(h, h.caller)
    assert item["message_blocks"] == [{"p": ["Send the email?"]}]
