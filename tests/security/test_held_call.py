"""R12 over HTTP on the local stack: a tool call bound to an open interrupt stays open while the
interrupt is open. Nobody settles it from outside (`/inputs` `tool.result`/`tool.error`, or
`/calls/settle`), neither the end user whose session it is nor an operator key: 409 `call_held`
naming the interrupt, and nothing recorded. The approver's resume then decides the call."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from holdpoint.core import engine
from holdpoint.core.errors import CallHeld, Refusal
from holdpoint.core.protocols.worker_actions import DecisionResponse, WorkerSubmitBody
from holdpoint.core.state import Decision, SessionState
from holdpoint.services import worker_answers
from holdpoint.services.caller import Caller
from tests.harness import Harness
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, declare_agent, wait_execution

OPERATORS_ONLY = {"origins": ["operator"]}


def _held(api: Api, stack: Any, worker_url: str) -> tuple[Api, Api, str, str, str]:
    """An end user's session parked on the seed worker's `confirm`, under an operators-only policy."""
    declare_agent(api, worker_url, approval=OPERATORS_ONLY)
    put_api_key(stack.env["TABLE_NAME"], "hp_held_call_operator", stack.tenant, "ops", "operator")
    operator = Api(stack.base_url, "hp_held_call_operator")
    user = client_token_api(stack, "end-user-eve")
    sid = user.start()
    [interrupt] = user.wait_status(sid, "interrupted")["interrupts"]
    iid, call_id = interrupt["interrupt_id"], interrupt["call_id"]
    wait_execution(stack, sid, iid, "RUNNING")
    return user, operator, sid, iid, call_id


def _attempts(call_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [("inputs", {"type": "tool.result", "id": call_id, "result": "sent"}),
            ("inputs", {"type": "tool.error", "id": call_id, "error": "nope"}),
            ("calls/settle", {"type": "tool.result", "id": call_id, "result": "sent"}),
            ("calls/settle", {"type": "tool.error", "id": call_id, "error": "nope"})]


def _refused_everywhere(who: Api, stack: Any, sid: str, iid: str, call_id: str) -> None:
    before, events = table_count(stack), len(who.events(sid))
    for route, body in _attempts(call_id):
        err = refusal(who.req("POST", f"/v1/sessions/{sid}/{route}", body), 409, code="call_held", param="id")
        assert iid in err["message"] and err["interrupt_id"] == iid, err
    assert table_count(stack) == before and len(who.events(sid)) == events
    view = who.view(sid)
    assert view["status"] == "interrupted" and [c["id"] for c in view["calls"]] == [call_id]


def test_held_call_end_user_cannot_settle_the_call_its_approval_holds(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    user, operator, sid, iid, call_id = _held(api, stack, worker[0])
    refusal(user.resume(sid, iid, {"approved": True}), 403, code="not_an_approver")
    _refused_everywhere(user, stack, sid, iid, call_id)
    # The operator's denial decides the call: the worker settles it as declined, nothing is ignored.
    assert operator.resume(sid, iid, {"approved": False}).status_code == 200
    view = user.wait_status(sid, "done")
    assert [m["content"] for m in view["messages"][2:]] == ["declined", "I did not send it."]
    assert not [e for e in user.events(sid) if e["type"] == "call.result_ignored"]


def test_held_call_operator_key_cannot_settle_it_either(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    user, operator, sid, iid, call_id = _held(api, stack, worker[0])
    _refused_everywhere(operator, stack, sid, iid, call_id)
    assert operator.resume(sid, iid, {"approved": True}).status_code == 200
    view = user.wait_status(sid, "done")
    assert [m["content"] for m in view["messages"][2:]] == ["sent", "Email sent."]
    # Once the interrupt is resolved and the call settled, a late settle is the ordinary 409.
    refusal(operator.req("POST", f"/v1/sessions/{sid}/calls/settle",
                         {"type": "tool.result", "id": call_id, "result": "x"}), 409, code="call_not_open")


def _parked_state() -> tuple[Harness, SessionState, str]:
    """A session of the in-process seed worker, parked on `confirm` with the call bound to it."""
    h = Harness()
    h.say("Email Bob")
    state = h.state()
    [interrupt] = state.open_interrupts()
    assert interrupt.call_id is not None
    state.decisions["dec-other"] = Decision(id="dec-other", order=999, trigger={"type": "client.action"},
                                            anchor=None, turn_id=None)
    return h, state, interrupt.call_id


@pytest.mark.usefixtures("aws")
def test_held_call_a_worker_answer_naming_it_is_refused_whole() -> None:
    """The engine's own path: an answer to another decision that settles the held call breaks R12.
    A submit gets 409 `call_held` (below); an answer in a response body fails its decision."""
    for kind in ("tool.result", "tool.error"):
        _, state, call_id = _parked_state()
        action = {"type": kind, "id": call_id, "result": "sent"} if kind == "tool.result" else {
            "type": kind, "id": call_id, "error": "nope"}
        with pytest.raises(CallHeld) as info:
            engine.apply_submit(state, "dec-other", DecisionResponse.model_validate({"actions": [action]}), state.now)
        assert info.value.param == "actions[0].id" and info.value.refusal.code == "call_held"
        assert state.calls[call_id].status == "open"


def test_held_call_a_worker_submit_is_409_call_held(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    h, state, call_id = _parked_state()
    held = Refusal("call_held", f"call {call_id} is held by open interrupt i", "id", interrupt_id="i")

    def refuse(*_: Any) -> bool:
        raise CallHeld("actions[0].id", held)

    monkeypatch.setattr(engine, "apply_submit", refuse)
    body = WorkerSubmitBody.model_validate({"session_id": h.session_id, "decision_id": "dec-other",
                                            "actions": [{"type": "tool.result", "id": call_id, "result": "x"}]})
    with pytest.raises(Refusal) as info:
        worker_answers.submit(h.store, h.queue, Caller(h.caller.tenant, "backend", "machine"), body)
    assert (info.value.code, info.value.param, info.value.extra) == ("call_held", "actions[0].id",
                                                                     {"interrupt_id": "i"})


@pytest.mark.usefixtures("aws")
def test_held_call_resuming_the_interrupt_lets_its_answer_settle_the_call() -> None:
    h, _, call_id = _parked_state()
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    h.settle()
    call = h.state().calls[call_id]
    assert (call.status, call.ok, call.result) == ("settled", True, "sent")
