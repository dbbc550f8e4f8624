"""A "Deny" is a denial on every channel (issue: the answer's meaning). Two approvers of a
`{subjects: [qa, qb], quorum: 2}` policy each say no through one channel: Slack's default Deny
button, a declared "Reject" option by a one-click link, the console's option button, an MCP
elicitation choice, AG-UI `cancelled`. Before the fix each of these counted as an approval, so
two of them approved the action (and the first never resolved it as denied). Now:

- with `deny_resolves` (the default) the first Deny resolves the interrupt as denied, and the
  shipped seed worker declines to send the email;
- with `deny_resolves: false` both are recorded as denials and the interrupt stays open, with no
  approval counted;
- an answer that says neither approve nor deny is refused under the policy, and records nothing;
- a raise under the policy whose options do not each say whether they approve is refused.

In process on moto's AWS with the real engine and the seed worker; Slack through the real
`slack_sdk` client to the local fake and the channels function's handler; links through the links
service; AG-UI and MCP through their services' own mappings of the answer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from holdpoint.aws import signing
from holdpoint.bridges.agui import models as agui_models
from holdpoint.bridges.agui import service as agui
from holdpoint.bridges.mcp import models as mcp_models
from holdpoint.bridges.mcp import translation as mcp
from holdpoint.core.errors import Refusal
from holdpoint.services import links
from holdpoint.services.caller import Caller
from holdpoint.services.resume import resume
from tests.harness import Harness, declaring, seed_worker
from tests.security.test_sealed_values import PREFIX, click, fake, post
from tests.slack_fake import SlackFake, click_body, sign
from tests.unit.test_slack import SIGNING

__all__ = ["fake"]
pytestmark = pytest.mark.usefixtures("aws")

QUORUM = {"subjects": ["qa", "qb"], "quorum": 2}
SLACK = {"slack": {"channel": "#ops", "bot_token": f"{PREFIX}/slack-bot", "signing_secret": f"{PREFIX}/slack-signing",
                   "users": {"UQA": "qa", "UQB": "qb"}}}
OPTIONS = [{"label": "Send", "value": "send", "approved": True},
           {"label": "Reject", "value": "reject", "approved": False}]
QA, QB = Caller("t1", "qa", "client"), Caller("t1", "qb", "client")

Deny = Callable[[Harness, Caller, SlackFake], Any]


def parked(policy: dict[str, Any], *, options: bool = False) -> Harness:
    """The seed worker parked on `send_email` under `policy`, notifying Slack; with `options`, its
    interrupt declares Send and Reject."""
    log: list[dict[str, Any]] = []
    worker = seed_worker(log)
    if options:
        worker = declaring(worker, {"payload": {"message": "Send the email?", "metadata": {"options": OPTIONS}}})
    h = Harness(worker, agent={"approval": policy, "notify": [SLACK]})
    h.log = log
    h.say("Email Bob")
    assert h.state().interrupts[iid(h)].status == "open"
    return h


def iid(h: Harness) -> str:
    return next(iter(h.state().interrupts))


def by_slack_default_deny(h: Harness, who: Caller, slack: SlackFake) -> Any:
    ts, message = post(h, slack) if not slack.posts else slack.posts[-1]
    body = click_body(message, ts, 1, user={"qa": "UQA", "qb": "UQB"}[who.subject])  # Deny, the second button
    status, out = click(body, sign(SIGNING, body))
    assert status == 200, out
    return out


def by_link_reject(h: Harness, who: Caller, slack: SlackFake) -> Any:
    minted = links.mint(signing, "https://api.example.com", "t1", h.session_id or "", h.state().interrupts[iid(h)],
                        f"key:{who.subject}", time.time())
    token = minted["option-1"].rsplit("/", 1)[1]
    return links.follow(h.store, h.parking, signing, token, "option-1").resumed


def by_console_option(h: Harness, who: Caller, slack: SlackFake) -> Any:
    """What the console's option button sends: the option's value in the AG-UI envelope."""
    return resume(h.store, h.parking, who, h.session_id or "", iid(h), {"status": "resolved", "payload": "reject"})


def by_mcp_choice(h: Harness, who: Caller, slack: SlackFake) -> Any:
    interrupt = h.state().interrupts[iid(h)]
    chosen = mcp.answer_from(mcp_models.Elicited.model_validate({"action": "accept", "content": {"choice": "1"}}),
                             interrupt)
    return resume(h.store, h.parking, who, h.session_id or "", iid(h), chosen)


def by_agui_cancelled(h: Harness, who: Caller, slack: SlackFake) -> Any:
    body = agui_models.RunAgentInput.model_validate({
        "threadId": h.session_id, "runId": f"run-{who.subject}", "messages": [],
        "resume": [{"interruptId": iid(h), "status": "cancelled"}]})
    return agui.run(h.store, h.queue, h.parking, who, "assistant", body, wait_secs=0)


CHANNELS: dict[str, tuple[Deny, bool]] = {
    "slack_default_deny": (by_slack_default_deny, False),
    "link_reject_option": (by_link_reject, True),
    "console_option_button": (by_console_option, True),
    "mcp_choice": (by_mcp_choice, True),
    "agui_cancelled": (by_agui_cancelled, False),
}


@pytest.mark.parametrize("channel", CHANNELS)
def test_the_first_deny_of_a_quorum_resolves_it_as_denied_and_the_email_is_not_sent(
        channel: str, fake: SlackFake) -> None:
    deny, options = CHANNELS[channel]
    h = parked(QUORUM, options=options)
    deny(h, QA, fake)
    h.wake(iid(h), "resumed")
    closed = h.state().interrupts[iid(h)]
    assert closed.status == "resolved" and [a.status for a in closed.approvals] in (["denied"], ["cancelled"])
    [resumed] = h.triggers("interrupt.resumed")
    assert resumed["verdict"] in ("denied", "cancelled") and resumed["responder"]["subject"] == "qa"
    assert [m.get("content") for m in h.view()["messages"] if m["role"] == "tool"] == ["declined"]
    assert h.view()["messages"][-1]["content"] == "I did not send it."


@pytest.mark.parametrize("channel", CHANNELS)
def test_two_denies_never_make_a_quorum_of_approvals(channel: str, fake: SlackFake) -> None:
    deny, options = CHANNELS[channel]
    h = parked({**QUORUM, "deny_resolves": False}, options=options)
    deny(h, QA, fake)
    deny(h, QB, fake)
    still = h.state().interrupts[iid(h)]
    assert still.status == "open" and len(still.approvals) == 2
    assert all(a.status in ("denied", "cancelled") for a in still.approvals)
    assert h.triggers("interrupt.resumed") == [] and h.view()["status"] == "interrupted"


@pytest.mark.parametrize("answer", ["deny", "approve", None, {"note": "ok"}, {"approved": "yes"}, True,
                                    {"status": "resolved", "payload": "maybe"}])
def test_an_answer_that_says_neither_is_refused_under_the_policy_and_records_nothing(answer: Any) -> None:
    h = parked(QUORUM)
    before = h.state().interrupts[iid(h)]
    with pytest.raises(Refusal) as refused:
        resume(h.store, h.parking, QA, h.session_id or "", iid(h), answer)
    assert refused.value.code == "invalid_resume" and refused.value.param in ("payload", "payload.payload")
    assert h.state().interrupts[iid(h)] == before


def test_a_raise_whose_options_do_not_say_whether_they_approve_is_refused_under_a_policy() -> None:
    vague = [{"label": "Send", "value": "send", "approved": True}, {"label": "Hmm", "value": "hmm"}]
    worker = declaring(seed_worker(), {"payload": {"message": "Send?", "metadata": {"options": vague}}})
    h = Harness(worker, agent={"approval": QUORUM})
    h.say("Email Bob")
    assert h.state().interrupts == {}
    [failed] = h.events("decision.failed")
    assert failed["data"]["error"]["param"] == "actions[0].payload.metadata.options[1]"
