"""A5 (expiry with a declared outcome, reminders, escalation), against the real core, runner and
store on moto. moto's in-process Scheduler stores schedules but never fires them, so these tests
read the schedules the runner set and play their messages, twice (a duplicated timer message must
change nothing). Over HTTP on the local stack: tests/e2e/test_expiry_inbox_e2e.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from holdpoint import assembly
from holdpoint.aws.outbox import events as outbox_events
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.timers import Timers
from holdpoint.core import expiry
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import first_error
from holdpoint.services import sessions
from tests.harness import Harness, declaring, seed_worker
from tests.unit.test_api import call_api, start_session, table_items
from tests.unit.test_notify import HOOK, Recording, notifier, on_bus, stream_batch
from tests.unit.test_notify import bus as bus  # the EventBridge bus fixture

pytestmark = pytest.mark.usefixtures("memory")

BOSS = {"subjects": ["boss"], "groups": ["leads"]}


@pytest.fixture
def handlers(aws: dict[str, str]) -> Iterator[None]:
    assembly.reset()
    yield
    assembly.reset()


def timer_messages(h: Harness) -> list[dict[str, Any]]:
    """The timers (Scheduler schedules) the runner set (what each will send, and after how long)."""
    out = [{"seconds": t.seconds, "message": t.message} for t in Timers().pending()
           if t.message.get("kind") == expiry.TIMER_MESSAGE and t.message["session_id"] == h.session_id]
    return sorted(out, key=lambda d: d["seconds"])


def fire(h: Harness, timer: dict[str, Any], times: int = 2) -> None:
    """What the schedule sends when it is due; `times` > 1 plays SQS duplicating it."""
    for _ in range(times):
        h.runner.handle(work_message(timer["message"]))


def asking(**fields: Any) -> Any:
    """The seed worker, its `confirm` interrupt carrying `fields`."""
    return declaring(seed_worker(), fields)


# --- the declared outcome ----------------------------------------------------------------------


def test_a5_expiry_answers_cancel_deny_or_approve() -> None:
    assert expiry.answer(None) == expiry.answer("cancel") == {"status": "cancelled", "reason": "expired"}
    assert expiry.answer("deny") == {"status": "resolved", "reason": "expired", "on_expiry": "deny",
                                     "approved": False}
    assert expiry.answer("approve") == {"status": "resolved", "reason": "expired", "on_expiry": "approve",
                                        "approved": True}


@pytest.mark.parametrize(("outcome", "last"), [("deny", "I did not send it."), ("approve", "Email sent."),
                                                ("cancel", "I did not send it.")])
def test_a5_agent_on_expiry_resolves_with_the_declared_answer_and_tells_the_worker(outcome: str, last: str) -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log), agent={"interrupt_expires_in": 60, "interrupt_on_expiry": outcome})
    h.say("Email Bob")
    interrupt = h.open_interrupt()
    assert interrupt["on_expiry"] == outcome
    h.wake(interrupt["interrupt_id"], "expired")  # ParkBranch's States.Timeout catch
    h.wake(interrupt["interrupt_id"], "expired")  # delivered twice: nothing more happens
    [resumed] = [r["trigger"] for r in log if r["trigger"]["type"] == "interrupt.resumed"]
    assert resumed["payload"] == expiry.answer(outcome)
    assert h.view()["messages"][-1]["content"] == last
    [expired] = h.events("interrupt.expired")
    assert expired["data"] == {"interrupt_id": interrupt["interrupt_id"], "outcome": outcome,
                               "payload": expiry.answer(outcome)}
    [cleared] = h.events("session.interrupt_resumed")
    assert cleared["data"]["expired"] is True and cleared["data"]["responder"] == {"origin": "system",
                                                                                   "subject": "expiry"}
    again = h.resume(interrupt["interrupt_id"], {"approved": True})
    assert again.noop is True and again.cleared is not None and again.cleared.status == "expired"


def test_a5_the_interrupt_action_overrides_the_agent_default() -> None:
    h = Harness(asking(on_expiry="approve", expires_in=30), agent={"interrupt_on_expiry": "deny"})
    h.say("Email Bob")
    interrupt = h.open_interrupt()
    assert interrupt["on_expiry"] == "approve"
    h.wake(interrupt["interrupt_id"], "expired")
    assert h.view()["messages"][-1]["content"] == "Email sent."


# --- reminders and escalation ---------------------------------------------------------------------


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a5_reminders_and_escalation_fire_exactly_once_each_on_durable_timers() -> None:
    h = Harness(asking(remind_after=[10, 20], escalate_after=30, approval={"escalate_to": BOSS}, expires_in=60))
    h.say("Email Bob")
    interrupt = h.open_interrupt()
    iid = interrupt["interrupt_id"]
    assert (interrupt["remind_after"], interrupt["escalate_after"], interrupt["escalate_to"]) == ([10, 20], 30, BOSS)
    timers = timer_messages(h)
    assert [(t["seconds"], t["message"]["timer"], t["message"]["index"]) for t in timers] == [
        (10, "remind", 0), (20, "remind", 1), (30, "escalate", 0)]
    # Parking again (a redelivered step) asks for the same timers: still one schedule each.
    for t in expiry.timers(h.caller.tenant, h.session_id or "", h.state().interrupts[iid]):
        h.runner.timers.schedule(t.seconds, t.message, t.key)
    assert len(timer_messages(h)) == 3
    for timer in timers:
        fire(h, timer)
    reminded = h.events("interrupt.reminded")
    assert [(e["data"]["reminder"], e["data"]["of"], e["data"]["after_secs"]) for e in reminded] == [
        (1, 2, 10), (2, 2, 20)]
    [escalated] = h.events("interrupt.escalated")
    assert escalated["data"] == {"interrupt_id": iid, "reason": "confirm", "escalate_to": BOSS, "after_secs": 30}
    assert h.view()["interrupts"][0]["escalated"] is True
    assert h.runner.counters.counts["interrupts_reminded"] == 2
    assert h.runner.counters.counts["interrupts_escalated"] == 1
    assert h.view()["status"] == "interrupted"  # a reminder changes nothing else


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a5_a_timer_after_the_resume_or_for_another_generation_changes_nothing() -> None:
    h = Harness(asking(remind_after=[10], escalate_after=20, interrupt_id="int-1"))
    h.say("Email Bob")
    remind, escalate = timer_messages(h)
    h.runner.handle(work_message({**remind["message"], "generation": 7}))  # raised again since: not this one's timer
    assert h.events("interrupt.reminded") == []
    h.resume("int-1", {"approved": True})
    events = len(h.events())
    fire(h, remind)
    fire(h, escalate)
    assert len(h.events()) == events
    assert h.events("interrupt.reminded") == [] and h.events("interrupt.escalated") == []


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a5_agent_defaults_declare_reminders_and_escalation() -> None:
    h = Harness(agent={"interrupt_remind_after": [5], "interrupt_escalate_after": 7, "approval": {"escalate_to": BOSS}})
    h.say("Email Bob")
    assert [(t["seconds"], t["message"]["timer"]) for t in timer_messages(h)] == [(5, "remind"), (7, "escalate")]


# --- bad declarations ---------------------------------------------------------------------------


def test_a5_a_negative_delay_or_a_timer_after_the_expiry_is_refused_where_declared(handlers: None) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    before, events = table_items(), len(h.events())
    for body, param in (({"reason": "r", "remind_after": [-1]}, "remind_after[0]"),
                        ({"reason": "r", "remind_after": []}, "remind_after"),
                        ({"reason": "r", "escalate_after": 0}, "escalate_after"),
                        ({"reason": "r", "on_expiry": "maybe"}, "on_expiry"),
                        ({"reason": "r", "approval": {"escalate_to": {}}}, "approval.escalate_to"),
                        ({"reason": "r", "escalate_to": BOSS}, "escalate_to"),  # the approver policy's field (A2)
                        ({"reason": "r", "expires_in": 60, "remind_after": [30, 60]}, "remind_after[1]"),
                        ({"reason": "r", "expires_in": 60, "escalate_after": 90}, "escalate_after")):
        status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts", body, origin="operator")
        assert status == 400 and out["error"]["param"] == param, (body, out)
    assert table_items() == before and len(h.events()) == events


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a5_a_timer_after_the_agents_expiry_is_refused_on_the_api_and_on_a_worker_action() -> None:
    h = Harness(asking(remind_after=[120]), agent={"interrupt_expires_in": 60})
    h.say("Email Bob")
    [failed] = h.events("decision.failed")
    assert failed["data"]["error"]["param"] == "actions[0].remind_after[0]"
    assert h.view()["interrupts"] == [] and timer_messages(h) == []
    assert h.session_id
    with pytest.raises(Refusal) as refused:
        sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="r", payload=None, global_=False,
                                 interrupt_id=None, expires_in=None, request_id="req-1",
                                 declared=expiry.Declared(escalate_after=60))
    assert (refused.value.code, refused.value.param) == ("validation_error", "escalate_after")


def test_a5_agent_config_refuses_bad_defaults_naming_the_field() -> None:
    for config, param in (({"interrupt_remind_after": [0]}, "interrupt_remind_after[0]"),
                          ({"interrupt_expires_in": 10, "interrupt_remind_after": [5, 10]}, "interrupt_remind_after"),
                          ({"interrupt_expires_in": 10, "interrupt_escalate_after": 11}, "interrupt_escalate_after"),
                          ({"interrupt_on_expiry": "later"}, "interrupt_on_expiry"),
                          ({"retention_days": -1}, "retention_days")):
        with pytest.raises(ValidationError) as err:
            AgentConfig.model_validate(config)
        assert first_error(err.value)[0] == param, config


# --- published as notifications ------------------------------------------------------------------


def test_a5_reminders_and_escalations_are_published_with_links_once_each(bus: str) -> None:
    entry = {**HOOK, "events": ["interrupt.reminded", "interrupt.escalated"]}
    h = Harness(asking(remind_after=[10], escalate_after=20, approval={"escalate_to": BOSS}),
                agent={"notify": [entry]})
    h.say("Email Bob")
    for timer in timer_messages(h):
        fire(h, timer)
    channel = Recording()
    n = notifier(h, channel)
    bodies = []
    for etype in ("interrupt.reminded", "interrupt.escalated"):
        [item] = list(outbox_events(stream_batch(h, etype), h.store))
        bodies.append(n.on_event(item.tenant, item.session_id, item.event))
        n.on_event(item.tenant, item.session_id, item.event)  # the stream delivers again: nothing more
    reminded, escalated = bodies
    assert reminded is not None and escalated is not None
    assert (reminded["type"], reminded["reason"], reminded["reminder"], reminded["of"]) == (
        "interrupt.reminded", "confirm", 1, 1)
    assert (escalated["type"], escalated["escalate_to"]) == ("interrupt.escalated", BOSS)
    assert set(reminded["links"]) == set(escalated["links"]) == {"approve", "deny"}
    assert [sent["type"] for sent, _, _ in channel.got] == ["interrupt.reminded", "interrupt.escalated"]
    published = {(e["detail"]["event_id"], e["detail-type"]) for e in on_bus(bus)}  # the bus may see one twice
    assert sorted(kind for _, kind in published) == ["interrupt.escalated", "interrupt.reminded"]
