"""One test (or more) per interrupt rule of PROTOCOL.md §3, against the real core and services on the in-memory store
(`holdpoint_local.memory`; tests/unit/test_store_contract.py holds it to the DynamoDB store's promises).

End-to-end versions over HTTP on the local stack live in tests/e2e/.
"""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import may_resume
from holdpoint.core.protocols.client import SettleBody
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Resumed, resume
from holdpoint.services.settle import settle
from tests.harness import Harness, seed_worker

pytestmark = pytest.mark.usefixtures("memory")


def interrupt_everything(log: list[dict[str, Any]]) -> Any:
    """A worker that asks a person before every tool, then does what it was told."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        log.append(req)
        t = req["trigger"]
        if t["type"] == "tool.execute":
            return {"actions": [{"type": "interrupt", "reason": f"approve {t['name']}",
                                 "payload": {"toolCallId": t["id"]}}]}
        if t["type"] == "interrupt.resumed":
            return {"actions": [{"type": "tool.result", "result": f"ok {t['payload']['n']}"}]}
        return req["proposed"]

    return decide


# --- R1 -----------------------------------------------------------------------------------


def test_r1_interrupt_action_pauses_and_mints_an_id() -> None:
    h = Harness()
    h.say("Email Bob")
    view = h.view()
    assert view["status"] == "interrupted"
    [interrupt] = view["interrupts"]
    assert interrupt["interrupt_id"].startswith("int_")
    assert interrupt["reason"] == "confirm" and interrupt["origin"] == "worker"


def test_r1_reason_is_required_and_the_error_names_it() -> None:
    h = Harness(lambda req: {"actions": [{"type": "interrupt"}]} if req["trigger"]["type"] == "tool.execute"
                else req["proposed"])
    h.say("Email Bob")
    [failed] = h.events("decision.failed")
    assert failed["data"]["error"]["param"] == "actions[0].reason"
    assert h.view()["interrupts"] == []


def test_r1_worker_chosen_id_is_used_and_raising_it_again_is_a_noop() -> None:
    def decide(req: dict[str, Any]) -> dict[str, Any]:
        t = req["trigger"]
        if t["type"] == "tool.execute":
            twice = {"type": "interrupt", "interrupt_id": "int-1", "reason": "confirm"}
            return {"actions": [twice, dict(twice)]}
        return req["proposed"]

    h = Harness(decide)
    h.say("Email Bob")
    assert [i["interrupt_id"] for i in h.view()["interrupts"]] == ["int-1"]
    assert len(h.events("session.interrupted")) == 1


# --- R2 -----------------------------------------------------------------------------------


def test_r2_interrupt_anchors_to_the_head_of_its_branch_and_parks_only_that_branch() -> None:
    h = Harness()
    h.say("Email Bob")
    view = h.view()
    head = view["head_id"]
    assert view["messages"][-1]["tool_calls"][0]["function"]["name"] == "send_email"
    assert view["interrupts"][0]["anchor"] == head
    # Another branch (an edit of the first message) is not parked.
    out = h.view_input([{"role": "user", "content": "Actually, say hi"}])
    assert out.turn_id
    assert h.view()["status"] == "done"


# --- R3 -----------------------------------------------------------------------------------


def test_r3_two_interrupts_on_one_head_each_resume_delivers_and_follow_ons_wait_for_both() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(interrupt_everything(log))
    h.say("do two things")
    view = h.view()
    first, second = view["interrupts"]
    assert first["anchor"] == second["anchor"] == view["head_id"]
    h.resume(first["interrupt_id"], {"n": 1})
    kinds = [r["trigger"]["type"] for r in log]
    assert kinds[-1] == "interrupt.resumed"  # delivered although the branch is still parked
    assert "tool.finished" not in kinds  # held: the second interrupt still parks the branch
    assert h.view()["status"] == "interrupted"
    h.resume(second["interrupt_id"], {"n": 2})
    kinds = [r["trigger"]["type"] for r in log]
    tail = kinds[kinds.index("interrupt.resumed"):]
    assert tail[:2] == ["interrupt.resumed", "interrupt.resumed"]
    assert tail.count("tool.finished") == 2
    assert kinds.count("llm.finished") == 2  # exactly one re-prompt after both settled
    assert h.view()["status"] == "done"


# --- R4 -----------------------------------------------------------------------------------


def test_r4_interrupt_before_any_message_is_global_and_parks_every_branch() -> None:
    def decide(req: dict[str, Any]) -> dict[str, Any]:
        if req["trigger"]["type"] == "session.start":
            return {"actions": [{"type": "interrupt", "reason": "setup"}]}
        return req["proposed"]

    h = Harness(decide)
    h.say("hello")
    [interrupt] = h.view()["interrupts"]
    assert "anchor" not in interrupt
    with pytest.raises(Refusal) as refused:
        h.view_input([{"role": "user", "content": "another branch"}])
    assert refused.value.code == "interrupted"
    # The client.messages decision queued behind it is held until the resume.
    assert [r for r in h.state().decisions.values() if r.trigger["type"] == "client.messages"][0].status == "pending"
    h.resume(interrupt["interrupt_id"], {"ok": True})
    assert h.view()["status"] in ("done", "running")


def test_r4_api_can_raise_a_global_system_style_pause() -> None:
    h = Harness(origin="operator")
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    out = sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="budget_exceeded",
                                   payload={"spent": 1.5}, global_=True, interrupt_id=None, expires_in=None,
                                   request_id="r1")
    assert out.interrupt["origin"] == "operator" and "anchor" not in out.interrupt
    with pytest.raises(Refusal):
        h.say("more")


# --- R5 -----------------------------------------------------------------------------------


def test_r5_operator_raises_through_the_api_at_the_head_with_origin_recorded() -> None:
    h = Harness(origin="operator")
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    head = h.view()["head_id"]
    out = sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="review", payload=None,
                                   global_=False, interrupt_id="op-1", expires_in=None, request_id="r2")
    assert out.interrupt_id == "op-1"
    view = h.view()
    assert view["status"] == "interrupted"
    assert view["interrupts"][0]["anchor"] == head and view["interrupts"][0]["origin"] == "operator"


# --- R6 -----------------------------------------------------------------------------------


def test_r6_llm_call_in_flight_on_a_parked_branch_is_voided_and_never_recorded() -> None:
    def decide(req: dict[str, Any]) -> dict[str, Any]:
        if req["trigger"]["type"] == "client.messages":
            return {"actions": [{"type": "llm.call"}, {"type": "interrupt", "reason": "hold on"}]}
        return req["proposed"]

    h = Harness(decide)
    h.say("Email Bob")
    [voided] = h.events("call.voided")
    assert voided["data"]["kind"] == "llm_call"
    assert [m["role"] for m in h.view()["messages"]] == ["user"]  # the late reply was discarded
    assert not any(e["data"].get("role") == "assistant" for e in h.events("message.added"))


def test_r6_tool_calls_already_running_go_on_while_parked() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("do two things")  # lookup runs, send_email interrupts
    state = h.state()
    lookup = [c for c in state.calls.values() if c.name == "lookup"][0]
    assert lookup.status == "settled"
    assert h.view()["status"] == "interrupted"


def test_r6_llm_call_on_another_branch_goes_on_and_its_late_result_is_recorded() -> None:
    def decide(req: dict[str, Any]) -> dict[str, Any]:
        t = req["trigger"]
        if t["type"] == "llm.execute":
            if req["messages"][-1].get("content") == "Email Bob":
                return {"actions": [{"type": "llm.result", "message": {"role": "assistant", "tool_calls": [
                    {"id": "tc-1", "type": "function", "function": {"name": "send_email", "arguments": "{}"}}]}}]}
            return {}  # the model on the other branch is still thinking
        if t["type"] == "tool.execute":
            return {}  # deferred
        if t["type"] == "tool.finished":
            return {"actions": [{"type": "interrupt", "reason": "check the result"}]}
        return req["proposed"]

    h = Harness(decide, agent={"llm": {"provider": "worker"}})
    h.say("Email Bob")  # branch A: send_email deferred
    h.view_input([{"role": "user", "content": "say hi"}])  # branch B: its LLM call stays in flight
    llm_b = [c for c in h.state().open_calls() if c.kind == "llm_call"][0]
    settle(h.store, h.queue, h.caller, h.session_id or "", SettleBody(type="tool.result", id="tc-1", result="sent"))
    h.settle()  # A's tool.finished -> the worker parks branch A
    [interrupt] = h.view()["interrupts"]
    assert h.view()["status"] == "running" and not h.events("call.voided")
    assert h.state().calls[llm_b.id].status == "open"  # B's LLM call goes on
    settle(h.store, h.queue, h.caller, h.session_id or "", SettleBody(
        type="llm.result", id=llm_b.id, message={"role": "assistant", "content": "Hi!"}))
    h.settle()
    view = h.view()
    assert view["messages"][-1]["content"] == "Hi!" and view["status"] == "done"
    assert [i["interrupt_id"] for i in view["interrupts"]] == [interrupt["interrupt_id"]]


# --- R7 -----------------------------------------------------------------------------------


def test_r7_resume_clears_exactly_once_and_stale_or_unknown_ids_are_noops() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    assert h.resume("int-unknown", {"approved": True}) == Resumed("int-unknown", noop=True, known=False)
    first = h.resume(iid, {"approved": True})
    again = h.resume(iid, {"approved": False})
    assert first.noop is False and again.noop is True
    assert len([r for r in log if r["trigger"]["type"] == "interrupt.resumed"]) == 1
    assert len(h.events("session.interrupt_resumed")) == 1
    assert h.view()["messages"][-1]["content"] == "Email sent."


# --- R8 -----------------------------------------------------------------------------------


def test_r8_resume_on_the_active_branch_delivers_the_payload() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": False})
    [resumed] = [r["trigger"] for r in log if r["trigger"]["type"] == "interrupt.resumed"]
    assert resumed["payload"] == {"approved": False}
    assert h.view()["messages"][-1]["content"] == "I did not send it."


def test_r8_clearing_an_interrupt_on_an_abandoned_branch_delivers_nothing() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    h.view_input([{"role": "user", "content": "never mind, just say hi"}])
    assert h.resume(iid, {"approved": True}).noop is False
    assert not [r for r in log if r["trigger"]["type"] == "interrupt.resumed"]
    assert len(h.events("session.interrupt_resumed")) == 1
    assert h.view()["interrupts"] == []


# --- R9 -----------------------------------------------------------------------------------


def test_r9_new_message_on_a_parked_branch_is_refused_and_nothing_recorded() -> None:
    h = Harness()
    h.say("Email Bob")
    before = h.state()
    iid = h.open_interrupt()["interrupt_id"]
    with pytest.raises(Refusal) as refused:
        h.say("are you there?")
    assert refused.value.code == "interrupted"
    assert refused.value.extra["interrupt_ids"] == [iid]
    # A view that extends past the anchor is refused too.
    path = h.view()["messages"]
    with pytest.raises(Refusal) as refused_view:
        h.view_input([*path, {"role": "user", "content": "hello?"}])
    assert refused_view.value.code == "interrupted"
    after = h.state()
    assert after.header.version == before.header.version
    assert after.header.seq == before.header.seq


# --- R10 ----------------------------------------------------------------------------------


def test_r10_results_on_a_parked_branch_are_recorded_and_follow_ons_delivered_after_the_resume() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("do two things")
    kinds = [r["trigger"]["type"] for r in log]
    assert "tool.finished" not in kinds  # lookup's follow-on is held
    assert any(m["role"] == "tool" for m in h.view()["messages"])  # but its result is recorded
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    kinds = [r["trigger"]["type"] for r in log]
    after = kinds[kinds.index("interrupt.resumed"):]
    finished = [r["trigger"]["name"] for r in log if r["trigger"]["type"] == "tool.finished"]
    assert after[0] == "interrupt.resumed"
    assert finished == ["lookup", "send_email"]  # arrival order
    assert kinds.count("llm.finished") == 2
    assert h.view()["status"] == "done"


def test_r10_a_step_between_the_resume_and_its_wake_delivers_no_held_follow_on() -> None:
    """The resume closes the interrupt in the table, then its wake is sent: an engine step that
    runs in between (a kick already queued) must not deliver the held `tool.finished` ahead of
    `interrupt.resumed`."""
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("do two things")
    iid = h.open_interrupt()["interrupt_id"]
    out = resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    assert out.noop is False
    h.runner.run(h.caller.tenant, h.session_id or "")  # the step a kick runs before the wake arrives
    assert "tool.finished" not in [r["trigger"]["type"] for r in log]
    h.wake(iid, "resumed")
    kinds = [r["trigger"]["type"] for r in log]
    assert kinds[kinds.index("interrupt.resumed") + 1:].count("tool.finished") == 2
    assert "tool.finished" not in kinds[:kinds.index("interrupt.resumed")]
    assert h.view()["status"] == "done"


# --- R11 ----------------------------------------------------------------------------------


def test_r11_edit_branches_away_and_coming_back_reenters_the_parked_state() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    h.say("Email Bob")
    parked_path = h.view()["messages"]
    iid = h.open_interrupt()["interrupt_id"]
    h.view_input([{"role": "user", "content": "Just say hi"}])
    view = h.view()
    assert view["status"] == "done"  # the new branch dispatched and ran to the end
    assert view["messages"][0]["content"] == "Just say hi"
    assert [i["interrupt_id"] for i in view["interrupts"]] == [iid]  # still open on the old branch
    assert h.events("head.moved")
    # Come back to the parked branch: the head moves back and the session reads interrupted.
    h.view_input([{"id": m["id"], "role": m["role"], "content": m.get("content")} for m in parked_path[:1]]
                 + [{"id": parked_path[1]["id"], "role": "assistant"}])
    view = h.view()
    assert view["head_id"] == parked_path[-1]["id"]
    assert view["status"] == "interrupted"
    h.resume(iid, {"approved": True})
    assert h.view()["messages"][-1]["content"] == "Email sent."


# --- R12 ----------------------------------------------------------------------------------


def test_r12_interrupt_on_tool_execute_is_bound_to_the_call_which_stays_open() -> None:
    h = Harness()
    h.say("Email Bob")
    state = h.state()
    [interrupt] = state.open_interrupts()
    call = state.calls[interrupt.call_id or ""]
    assert call.name == "send_email" and call.status == "open"
    h.resume(interrupt.interrupt_id, {"approved": True})  # tool.result without id settles it
    call = h.state().calls[call.id]
    assert call.status == "settled" and call.result == "sent"


# --- R13 ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("aws")
def test_r13_the_pause_is_persisted_state_that_survives_new_processes() -> None:
    """On the DynamoDB store: what survives a new process is what the table holds."""
    from holdpoint.aws.store import Store

    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log), store=Store())
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    # A "restart": fresh store, queue, parking and runner objects over the same tables.
    fresh = Harness(seed_worker(log), store=Store())
    fresh.session_id, fresh.caller = h.session_id, h.caller
    fresh.store.put_agent(h.caller.tenant, "assistant", h.store.get_agent(h.caller.tenant, "assistant") or {})
    assert fresh.view()["status"] == "interrupted"
    assert fresh.token(iid)  # the token was stored for the interrupt
    fresh.resume(iid, {"approved": True})
    assert len([r for r in log if r["trigger"]["type"] == "interrupt.resumed"]) == 1
    assert fresh.view()["status"] == "done"


# --- R14 ----------------------------------------------------------------------------------


def test_r14_status_is_read_at_the_head_and_lists_every_open_interrupt() -> None:
    h = Harness()
    h.say("Email Bob")
    view = h.view()
    assert view["status"] == "interrupted"
    [interrupt] = view["interrupts"]
    assert set(interrupt) >= {"interrupt_id", "origin", "reason", "payload", "anchor", "created_at"}
    h.view_input([{"role": "user", "content": "Just say hi"}])
    view = h.view()
    assert view["status"] == "done" and len(view["interrupts"]) == 1  # listed although not at the head


# --- R15 ----------------------------------------------------------------------------------


def test_r15_events_carry_the_spec_fields() -> None:
    h = Harness()
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    h.resume(iid, {"approved": True})
    [raised] = h.events("session.interrupted")
    assert set(raised["data"]) >= {"interrupt_id", "origin", "reason", "payload", "anchor"}
    [cleared] = h.events("session.interrupt_resumed")
    assert cleared["data"]["payload"] == {"approved": True}
    assert cleared["data"]["responder"] == {"subject": "user-1", "origin": "client"}
    seqs = [e["seq"] for e in h.events()]
    assert seqs == list(range(1, len(seqs) + 1))


# --- R16 ----------------------------------------------------------------------------------


def test_r16_expiry_clears_as_cancelled_and_tells_the_worker() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log), agent={"interrupt_expires_in": 60})
    h.say("Email Bob")
    interrupt = h.open_interrupt()
    assert interrupt["expires_at"]
    h.wake(interrupt["interrupt_id"], "expired")  # what ParkBranch's States.Timeout catch sends
    [resumed] = [r["trigger"] for r in log if r["trigger"]["type"] == "interrupt.resumed"]
    assert resumed["payload"] == {"status": "cancelled", "reason": "expired"}
    assert h.view()["messages"][-1]["content"] == "I did not send it."
    assert h.resume(interrupt["interrupt_id"], {"approved": True}).noop is True


# --- R17 ----------------------------------------------------------------------------------


def test_r17_other_tenants_get_404_as_if_the_session_did_not_exist() -> None:
    h = Harness()
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    stranger = Caller("t2", "mallory", "operator")
    for attempt in (
        lambda: sessions.view(h.store, stranger, h.session_id),
        lambda: sessions.events(h.store, stranger, h.session_id, 0, 10),
        lambda: h.resume(iid, {"approved": True}, caller=stranger),
    ):
        with pytest.raises(Refusal) as refused:
            attempt()
        assert refused.value.code == "not_found"
    assert h.view()["status"] == "interrupted"


def test_r17_origin_ranks_guard_who_may_resume_and_the_responder_is_recorded() -> None:
    assert may_resume("client", "worker") and may_resume("worker", "client")
    assert not may_resume("client", "machine") and not may_resume("machine", "operator")
    assert may_resume("operator", "system") and not may_resume("machine", "system")
    h = Harness(origin="operator")
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="review", payload=None,
                             global_=False, interrupt_id="op-1", expires_in=None, request_id="r3")
    client = Caller(h.caller.tenant, "someone", "client")
    with pytest.raises(Refusal) as refused:
        h.resume("op-1", {"ok": True}, caller=client)
    assert refused.value.code == "forbidden"
    h.resume("op-1", {"ok": True})
    [*_, cleared] = h.events("session.interrupt_resumed")
    assert cleared["data"]["responder"] == {"subject": "user-1", "origin": "operator"}
