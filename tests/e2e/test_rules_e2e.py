"""The interrupt rules that tests/unit/test_rules.py proves on the core, again over HTTP on the
local stack: R1 (ids and the required reason), R2 (anchors per branch), R3 (two interrupts on one head), R6 (an LLM call
voided when its branch parks), R12 (a bound tool call that does not time out while parked) and
R15 (the events and their fields)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.e2e.test_agent_loop_e2e import Log, declare, events, operator, start, wait_for
from tests.harness import proposing
from tests.stack import Api
from tests.waiting import wait_quiet, wait_until_epoch

TWO_EMAILS = [
    {"when": {"role": "user"}, "reply": {"tool_calls": [
        {"name": "send_email", "arguments": {"to": "ann"}}, {"name": "send_email", "arguments": {"to": "bob"}}]}},
    {"when": {"role": "tool"}, "reply": {"content": "both handled"}},
]


@pytest.fixture
def log() -> Log:
    return Log()


def confirm(req: dict[str, Any]) -> dict[str, Any]:
    return {"actions": [{"type": "interrupt", "reason": "confirm", "payload": {"to": req["trigger"]["arguments"]}}]}


def send_on_resume(req: dict[str, Any]) -> dict[str, Any]:
    return {"actions": [{"type": "tool.result", "result": "sent"}]}


def test_r1_worker_chosen_id_is_used_a_repeat_is_a_noop_and_a_missing_reason_names_the_field(
        api: Api, stack: Any, log: Log) -> None:
    def mine(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "interrupt", "interrupt_id": "int_mine_1", "reason": "confirm"}]}

    declare(api, proposing(log, tool_execute=mine))
    sid = start(api, "email Bob")["session_id"]
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    assert interrupt["interrupt_id"] == "int_mine_1" and interrupt["origin"] == "worker"
    again = operator(stack).ok("POST", f"/v1/sessions/{sid}/interrupts",
                               {"reason": "confirm", "interrupt_id": "int_mine_1"})
    assert again["noop"] is True and len(api.view(sid)["interrupts"]) == 1

    def no_reason(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "interrupt", "payload": {"x": 1}}]}

    declare(api, proposing(log, tool_execute=no_reason))
    other = start(api, "email Ann")["session_id"]
    failed = wait_for(lambda: events(api, other, "decision.failed"), "the malformed decision to fail")
    assert "actions[0].reason" in str(failed[0]["data"])
    assert api.view(other)["interrupts"] == []


def test_r2_each_interrupt_anchors_to_its_branch_head_and_parks_only_that_branch(api: Api, stack: Any,
                                                                                  log: Log) -> None:
    declare(api, proposing(log, tool_execute=confirm, interrupt_resumed=send_on_resume))
    sid = start(api, "email Bob")["session_id"]
    first_branch = api.wait_status(sid, "interrupted")
    [on_bob] = first_branch["interrupts"]
    assert on_bob["anchor"] == first_branch["head_id"]
    api.ok("POST", f"/v1/sessions/{sid}/inputs",  # edit the first message: a second branch
           {"type": "client.messages", "messages": [{"role": "user", "content": "email Ann"}]})
    second_branch = api.wait(sid, lambda v: len(v["interrupts"]) == 2)
    [on_ann] = [i for i in second_branch["interrupts"] if i["interrupt_id"] != on_bob["interrupt_id"]]
    assert on_ann["anchor"] == second_branch["head_id"] != on_bob["anchor"]
    assert second_branch["status"] == "interrupted"
    assert api.resume(sid, on_bob["interrupt_id"], {"approved": True}).json()["noop"] is False
    wait_for(lambda: [e for e in events(api, sid, "session.interrupt_resumed")
                      if e["data"]["interrupt_id"] == on_bob["interrupt_id"]], "the abandoned branch's wake-up")
    wait_quiet(stack)  # the abandoned branch's interrupt cleared: nothing delivered, the head still parked
    assert log.triggers(sid, "interrupt.resumed") == []
    assert api.view(sid)["status"] == "interrupted"
    assert api.resume(sid, on_ann["interrupt_id"], {"approved": True}).json()["noop"] is False
    view = api.wait_status(sid, "done")
    assert [t["interrupt_id"] for t in log.triggers(sid, "interrupt.resumed")] == [on_ann["interrupt_id"]]
    assert [m["content"] for m in view["messages"] if m["role"] == "user"] == ["email Ann"]


def test_r3_two_interrupts_on_one_head_resume_one_then_the_other(api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log, tool_execute=confirm, interrupt_resumed=send_on_resume),
            llm={"provider": "scripted", "script": TWO_EMAILS})
    sid = start(api, "email Ann and Bob")["session_id"]
    view = api.wait(sid, lambda v: len(v["interrupts"]) == 2)
    first, second = view["interrupts"]
    assert first["anchor"] == second["anchor"] == view["head_id"]  # one head parked twice
    assert api.resume(sid, first["interrupt_id"], {"approved": True}).json()["noop"] is False
    wait_for(lambda: log.triggers(sid, "interrupt.resumed"), "the first interrupt.resumed")
    wait_quiet(stack)  # a wrongly released follow-on would have been delivered by now
    assert api.view(sid)["status"] == "interrupted"
    assert log.triggers(sid, "tool.finished") == []  # held: the other interrupt still parks the head
    assert api.resume(sid, second["interrupt_id"], {"approved": True}).json()["noop"] is False
    view = api.wait_status(sid, "done")
    assert [t["interrupt_id"] for t in log.triggers(sid, "interrupt.resumed")] == \
        [first["interrupt_id"], second["interrupt_id"]]
    assert len(log.triggers(sid, "tool.finished")) == 2
    assert len([e for e in events(api, sid, "call.started") if e["data"]["kind"] == "llm_call"]) == 2
    assert view["messages"][-1]["content"] == "both handled"


def test_r6_llm_call_in_flight_when_its_branch_parks_is_voided_and_its_late_result_refused(
        api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log, llm_execute={}), llm={"provider": "worker"})  # the model call stays open
    sid = start(api, "say hi")["session_id"]
    [execute] = wait_for(lambda: log.triggers(sid, "llm.execute"), "llm.execute")
    raised = operator(stack).ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "hold"})
    api.wait_status(sid, "interrupted")
    [voided] = wait_for(lambda: events(api, sid, "call.voided"), "call.voided")
    assert voided["data"]["call_id"] == execute["id"]
    late = api.req("POST", f"/v1/sessions/{sid}/calls/settle", {
        "type": "llm.result", "id": execute["id"], "message": {"role": "assistant", "content": "too late"}})
    assert late.status_code == 409 and late.json()["error"]["code"] == "call_not_open"
    assert [m["role"] for m in api.view(sid)["messages"]] == ["user"]  # never recorded
    assert all(n["message"].get("content") != "too late" for n in api.view(sid)["message_tree"]["nodes"])
    assert raised["interrupt_id"] in [i["interrupt_id"] for i in api.view(sid)["interrupts"]]


def test_r12_bound_tool_call_stays_open_past_its_attempt_timeout_while_parked(api: Api, stack: Any,
                                                                               log: Log) -> None:
    declare(api, proposing(log, tool_execute=confirm, interrupt_resumed=send_on_resume),
            retry={"tool": {"attempt_timeout_secs": 1, "max_attempts": 1}})
    sid = start(api, "email Bob")["session_id"]
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    [call] = [c for c in view["calls"] if c["kind"] == "tool_call"]
    assert interrupt["call_id"] == call["id"]  # bound to the tool.execute it answered
    attempt_deadline = datetime.fromisoformat(call["deadline"].replace("Z", "+00:00")).timestamp()
    wait_until_epoch(attempt_deadline + 2, "two attempt timeouts past the call's deadline")
    wait_quiet(stack)
    still = api.view(sid)
    assert [c["id"] for c in still["calls"]] == [call["id"]] and still["status"] == "interrupted"
    assert not [e for e in events(api, sid, "call.settled") if e["data"]["call_id"] == call["id"]]
    api.resume(sid, interrupt["interrupt_id"], {"approved": True})
    done = api.wait_status(sid, "done")
    assert done["messages"][-1]["content"] == "Email sent."
    [settled] = [e for e in events(api, sid, "call.settled") if e["data"]["call_id"] == call["id"]]
    assert settled["data"]["ok"] is True


def test_r15_interrupt_events_carry_the_spec_fields(api: Api, log: Log) -> None:
    declare(api, proposing(log, tool_execute=confirm, interrupt_resumed=send_on_resume))
    sid = start(api, "email Bob")["session_id"]
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    api.resume(sid, interrupt["interrupt_id"], {"approved": True})
    api.wait_status(sid, "done")
    [raised] = events(api, sid, "session.interrupted")
    assert set(raised["data"]) >= {"interrupt_id", "origin", "reason", "payload", "anchor"}
    assert raised["data"]["interrupt_id"] == interrupt["interrupt_id"] and raised["data"]["reason"] == "confirm"
    [cleared] = events(api, sid, "session.interrupt_resumed")
    assert set(cleared["data"]) >= {"interrupt_id", "payload", "responder"}
    assert cleared["data"]["payload"] == {"approved": True}
    assert cleared["data"]["responder"] == {"subject": "dev-user", "origin": "client"}
    seqs = [e["seq"] for e in api.events(sid)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
