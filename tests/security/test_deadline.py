"""The deadline is the deadline on every path (issue: close the holes, item 6). `resume` once never
compared the clock with `expires_at`, and the resolve's condition had no expiry term: until the
expiry was applied (ParkBranch's timeout, then the engine; on AWS that window is the timeout, the
queue and the engine, or a Scheduler timer's lag), an approval past the deadline beat
`on_expiry: deny`. Now an answer at or past `expires_at` is refused (410 `interrupt_expired`,
naming the outcome the expiry gives) on the API, Slack, links, MCP, A2A and AG-UI alike, nothing
is recorded, and the conditional write itself carries the deadline, so an answer that passed the
read but reaches the table after the deadline loses.

In process on moto's AWS with the real engine: the window is made by moving the open interrupt's
`expires_at` into the past, as a timeout not applied yet leaves it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from holdpoint.aws import signing
from holdpoint.bridges.a2a import models as a2a_models
from holdpoint.bridges.a2a import service as a2a
from holdpoint.bridges.agui import models as agui_models
from holdpoint.bridges.agui import service as agui
from holdpoint.bridges.mcp import models as mcp_models
from holdpoint.bridges.mcp import service as mcp
from holdpoint.core.answers import Answer, Responder
from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import Checked, resumable_origins
from holdpoint.core.state import iso_ms
from holdpoint.ports import InterruptRef, Resolve
from holdpoint.services import links
from holdpoint.services.resume import resume
from holdpoint_local.memory.store import MemoryStore
from tests.harness import Harness
from tests.security.test_sealed_values import OPS, click, fake, post
from tests.slack_fake import SlackFake, click_body, sign
from tests.unit.test_slack import SIGNING

__all__ = ["fake"]
pytestmark = pytest.mark.usefixtures("aws")


def past_its_deadline(on_expiry: str = "deny", slack: SlackFake | None = None) -> tuple[Harness, str]:
    """A session parked on send_email whose interrupt's `expires_at` has passed, its expiry not
    yet applied (the window between the deadline and the engine's wake); with `slack`, posted
    there while it could still be answered."""
    h = Harness(agent={"notify": [OPS], "interrupt_expires_in": 3600, "interrupt_on_expiry": on_expiry})
    h.say("Email Bob")
    if slack is not None:
        post(h, slack)
    state = h.state()
    [interrupt] = state.interrupts.values()
    interrupt.expires_at = iso_ms(time.time() - 0.05)
    state.touch(interrupt)
    h.store.commit(state)
    return h, interrupt.interrupt_id


def untouched(h: Harness, iid: str) -> None:
    found = h.store.read_interrupt("t1", h.session_id or "", iid)
    assert found is not None and (found.status, found.approvals) == ("open", ())


def by_api(h: Harness, iid: str, slack: SlackFake) -> Any:
    return resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})


def by_link(h: Harness, iid: str, slack: SlackFake) -> Any:
    interrupt = h.state().interrupts[iid]
    interrupt.expires_at = iso_ms(time.time() + 3600)  # a link is minted while it could still be answered
    minted = links.mint(signing, "https://api.example.com", "t1", h.session_id or "", interrupt, "key:ann",
                        time.time())
    return links.follow(h.store, h.parking, signing, minted["approve"].rsplit("/", 1)[1], "approve")


def by_slack(h: Harness, iid: str, slack: SlackFake) -> Any:
    ts, message = slack.posts[-1]  # posted while it could still be answered (`past_its_deadline`)
    body = click_body(message, ts, 0, user="U1")
    status, out = click(body, sign(SIGNING, body))
    if status != 200:
        raise Refusal(out["error"]["code"], out["error"]["message"], out["error"].get("param"))
    return out


def by_mcp(h: Harness, iid: str, slack: SlackFake) -> Any:
    args = mcp_models.AnswerApproval.model_validate({"id": f"{h.session_id}~{iid}", "payload": {"approved": True}})
    return mcp.answer(h.store, h.parking, h.caller, args)


def by_a2a(h: Harness, iid: str, slack: SlackFake) -> Any:
    turn = h.view()["turn_id"]
    body = a2a_models.SendMessage.model_validate({"message": {
        "messageId": "m-late", "role": "ROLE_USER", "taskId": f"{h.session_id}~{turn}",
        "parts": [{"data": {"approved": True}}]}})
    return a2a.send(h.store, h.queue, h.parking, h.caller, "assistant", body, wait_secs=0)


def by_agui(h: Harness, iid: str, slack: SlackFake) -> Any:
    body = agui_models.RunAgentInput.model_validate({
        "threadId": h.session_id, "runId": "run-late", "messages": [],
        "resume": [{"interruptId": iid, "status": "resolved", "payload": {"approved": True}}]})
    return agui.run(h.store, h.queue, h.parking, h.caller, "assistant", body, wait_secs=0)


CHANNELS: dict[str, Callable[[Harness, str, SlackFake], Any]] = {
    "api": by_api, "link": by_link, "slack": by_slack, "mcp": by_mcp, "a2a": by_a2a, "agui": by_agui}


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_answer_past_the_deadline_is_refused_on_every_channel_and_records_nothing(
        channel: str, fake: SlackFake) -> None:
    h, iid = past_its_deadline(slack=fake if channel == "slack" else None)
    with pytest.raises(Refusal) as refused:
        CHANNELS[channel](h, iid, fake)
    assert refused.value.code == "interrupt_expired", refused.value.body()
    untouched(h, iid)
    assert h.triggers("interrupt.resumed") == []


def test_the_refusal_names_the_outcome_the_expiry_gives() -> None:
    h, iid = past_its_deadline("deny")
    with pytest.raises(Refusal) as refused:
        by_api(h, iid, SlackFake.__new__(SlackFake))
    body = refused.value.body()["error"]
    assert (body["code"], body["on_expiry"], body["param"]) == ("interrupt_expired", "deny", "interrupt_id")


@pytest.mark.parametrize("twin", ["dynamodb", "memory"])
def test_an_answer_checked_in_time_but_written_after_the_deadline_loses(twin: str) -> None:
    """The read saw it open and in time; by the write the deadline has passed: the conditional write
    refuses it (`expired`), on DynamoDB and on its twin alike."""
    h = Harness(agent={"interrupt_expires_in": 3600}, store=MemoryStore() if twin == "memory" else None)
    h.say("Email Bob")
    [interrupt] = h.state().interrupts.values()
    assert interrupt.expires_at is not None
    late = iso_ms(time.time() + 3601)  # the answer reaches the table an hour and a second later
    checked = Checked(resumable_origins("client"), None, interrupt.generation, 0, now=late)
    answer = Answer("user-1", "client", "approved", {"approved": True}, None, late, "api")
    outcome, _ = h.store.resolve_interrupt(Resolve(InterruptRef("t1", h.session_id or "", interrupt.interrupt_id),
                                                   checked, resolution={"approved": True},
                                                   responder=Responder("user-1", "client"), at=late,
                                                   approval=answer))
    assert outcome == "expired"
    untouched(h, interrupt.interrupt_id)
    in_time = Checked(resumable_origins("client"), None, interrupt.generation, 0, now=iso_ms(time.time()))
    outcome, _ = h.store.resolve_interrupt(Resolve(InterruptRef("t1", h.session_id or "", interrupt.interrupt_id),
                                                   in_time, resolution={"approved": True},
                                                   responder=Responder("user-1", "client"),
                                                   at=iso_ms(time.time()), approval=answer))
    assert outcome == "resolved"
