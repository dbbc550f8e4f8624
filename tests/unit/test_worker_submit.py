"""Async worker answers (PROTOCOL.md §2.9): a worker defers a decision (HTTPS 202, or an
in-process worker raising `WorkerDeferred`) and answers later with `POST /v1/workers/submit`,
by `session_id` + `decision_id`. Applied exactly once through the engine's own path; a repeat is
a no-op; a decision no longer current is 409 naming it; bad input is 400 naming the field with
nothing recorded; another tenant gets 404."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.core import engine
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.worker_actions import DecisionResponse, WorkerSubmitBody
from holdpoint.core.state import Decision, SessionState
from holdpoint.outbound import workers
from holdpoint.ports import WorkerDeferred
from holdpoint.services import worker_answers
from holdpoint.services.caller import Caller
from tests.answering import answering
from tests.harness import Harness, seed_worker
from tests.unit.test_api import assert_error, call_api, table_items

INTERRUPT = {"actions": [{"type": "interrupt", "reason": "confirm", "payload": {"message": "Send the email?"}}]}


def deferring(log: list[dict[str, Any]]) -> Any:
    """The seed worker, except that it takes `tool.execute` and answers it later."""
    seed = seed_worker()

    def decide(req: dict[str, Any]) -> dict[str, Any] | None:
        log.append(req)
        if req["trigger"]["type"] == "tool.execute":
            raise WorkerDeferred("later")
        return seed(req)

    return decide


@pytest.fixture
def api(aws: dict[str, str]) -> Iterator[dict[str, str]]:
    assembly.reset()
    yield aws
    assembly.reset()


def deferred_session(tenant: str = "dev") -> tuple[Harness, list[dict[str, Any]], str]:
    """A session whose `tool.execute` the worker deferred: (harness, requests, decision id)."""
    log: list[dict[str, Any]] = []
    h = Harness(deferring(log), tenant=tenant)
    h.say("Email Bob")
    [request] = [r for r in log if r["trigger"]["type"] == "tool.execute"]
    return h, log, request["decision_id"]


def submit(h: Harness, decision_id: str, answer: dict[str, Any], **kw: Any) -> tuple[int, Any]:
    body = {"session_id": h.session_id, "decision_id": decision_id, **answer}
    return call_api("POST", "/v1/workers/submit", body, **{"origin": "machine", **kw})


# --- deferring ----------------------------------------------------------------------------------


def test_a_deferred_decision_stays_current_and_the_session_runs(api: dict[str, str]) -> None:
    h, log, did = deferred_session()
    decision = h.state().decisions[did]
    assert (decision.status, decision.via, decision.attempts) == ("pending", None, 1)
    [deferred] = h.events("decision.deferred")
    assert deferred["data"]["decision_id"] == did and deferred["data"]["attempt"] == 1
    assert h.view()["status"] == "running"
    h.settle()  # nothing is delivered again before the attempt timeout
    assert [r["decision_id"] for r in log].count(did) == 1


def test_a_deferred_decision_is_delivered_again_after_the_attempt_timeout() -> None:
    state = SessionState.new("t", "s", "a", now=1000.0)
    decision = Decision(id="dec-1", order=1, trigger={"type": "tool.execute"}, anchor=None, turn_id=None)
    state.decisions[decision.id] = decision
    assert engine.defer_decision(state, decision, 1000.0)
    assert engine.next_work(state, 1299.0) is None  # waiting on the worker blocks the queue
    work = engine.next_work(state, 1300.0)
    assert work is not None and (work.kind, work.id) == ("deliver", "dec-1")
    assert [e.key for e in state.effects if e.kind == "timer"] == ["decision/dec-1/1/deferred"]


def test_an_agent_gives_a_slow_worker_longer_with_its_decision_policy() -> None:
    state = SessionState.new("t", "s", "a", now=0.0)
    state.header.agent = AgentConfig.model_validate(
        {"retry": {"decision": {"attempt_timeout_secs": 3600, "total_timeout_secs": 86400}}})
    decision = Decision(id="dec-1", order=1, trigger={"type": "tool.execute"}, anchor=None, turn_id=None)
    state.decisions[decision.id] = decision
    assert engine.defer_decision(state, decision, 0.0)
    assert engine.next_work(state, 3599.0) is None and engine.next_work(state, 3600.0) is not None
    assert [e.seconds for e in state.effects if e.kind == "timer"] == [3600]


def test_a_worker_that_defers_forever_runs_out_the_decision_policy() -> None:
    state = SessionState.new("t", "s", "a", now=0.0)
    decision = Decision(id="dec-1", order=1, trigger={"type": "tool.execute"}, anchor=None, turn_id=None)
    state.decisions[decision.id] = decision
    now = 0.0
    while engine.defer_decision(state, decision, now):
        now += 300
    assert decision.status == "failed"
    assert [e.data["error"]["code"] for e in state.events if e.type == "decision.failed"] == ["deadline_exceeded"]


def test_a_submit_before_the_deferral_is_recorded_wins_and_the_deferral_is_a_noop() -> None:
    state = SessionState.new("t", "s", "a", now=0.0)
    decision = Decision(id="dec-1", order=1, trigger={"type": "client.action"}, anchor=None, turn_id=None)
    state.decisions[decision.id] = decision
    assert engine.apply_submit(state, "dec-1", DecisionResponse(), 0.0)
    assert not engine.defer_decision(state, decision, 0.0)
    assert (decision.status, decision.via) == ("delivered", "submit")


def test_https_worker_answering_202_defers(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    server = answering([(202, b"")])
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    try:
        with pytest.raises(WorkerDeferred):
            workers.decide(AgentConfig.model_validate({"worker": {"url": f"http://127.0.0.1:{server.server_address[1]}/"}}),
                           {"decision_id": "dec-1", "proposed": None})
    finally:
        server.shutdown()


# --- submitting -----------------------------------------------------------------------------------


def test_submit_applies_the_answer_once_through_the_engine(api: dict[str, str]) -> None:
    h, log, did = deferred_session()
    status, body = submit(h, did, INTERRUPT)
    assert status == 200, body
    assert body == {"ok": True, "session_id": h.session_id, "decision_id": did, "noop": False}
    h.settle()
    interrupt = h.open_interrupt()
    assert interrupt["reason"] == "confirm" and h.view()["status"] == "interrupted"
    decision = h.state().decisions[did]
    assert (decision.status, decision.via) == ("delivered", "submit")
    # The rest of the seed scenario runs as usual: approve, the worker answers in its body.
    h.resume(interrupt["interrupt_id"], {"approved": True})
    view = h.view()
    assert view["status"] == "done" and view["messages"][-1]["content"] == "Email sent."


def test_a_second_submit_for_the_same_decision_is_a_noop(api: dict[str, str]) -> None:
    h, _, did = deferred_session()
    assert submit(h, did, INTERRUPT)[0] == 200
    version, items = h.state().header.version, table_items()
    status, body = submit(h, did, {"actions": [{"type": "tool.result", "result": "sent"}]})
    assert status == 200 and body["noop"] is True, body
    assert h.state().header.version == version and table_items() == items
    assert len(h.state().interrupts) == 1


def test_a_decision_no_longer_current_is_409_naming_it(api: dict[str, str]) -> None:
    h, log, _ = deferred_session()
    answered = log[0]["decision_id"]  # session.start, answered in the worker's response body
    items = table_items()
    status, body = submit(h, answered, INTERRUPT)
    assert_error(status, body, 409, code="decision_not_current", param="decision_id")
    assert body["error"]["decision_id"] == answered
    assert table_items() == items


def test_unknown_decision_unknown_session_and_other_tenant_are_404(api: dict[str, str]) -> None:
    h, _, did = deferred_session()
    items = table_items()
    assert_error(*submit(h, "dec-nope", INTERRUPT), 404, code="not_found", param="decision_id")
    assert_error(*call_api("POST", "/v1/workers/submit", {"session_id": "ses-nope", "decision_id": did},
                           origin="machine"), 404, code="not_found")
    assert_error(*submit(h, did, INTERRUPT, tenant="other"), 404, code="not_found")
    assert table_items() == items
    assert h.state().decisions[did].status == "pending"


@pytest.mark.parametrize("origin", ["client", "worker"])
def test_only_machine_or_operator_keys_submit(api: dict[str, str], origin: str) -> None:
    h, _, did = deferred_session()
    assert_error(*submit(h, did, INTERRUPT, origin=origin), 403, code="forbidden")
    token = Caller("dev", "user-1", "client", own_only=True)
    with pytest.raises(Refusal) as refused:
        worker_answers.submit(h.store, h.queue, token, WorkerSubmitBody.model_validate(
            {"session_id": h.session_id, "decision_id": did}))
    assert refused.value.code == "forbidden"
    assert h.state().decisions[did].status == "pending"


@pytest.mark.parametrize(("answer", "param"), [
    ({"decision_id": None}, "decision_id"),
    ({"session_id": "bad id"}, "session_id"),
    ({"actions": [{"type": "interrupt"}]}, "actions[0].reason"),
    ({"actions": [{"type": "launch"}]}, "actions[0].type"),
    ({"verdict": "yes"}, "verdict"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
])
def test_bad_submits_are_400_naming_the_field_and_record_nothing(api: dict[str, str], answer: dict[str, Any],
                                                                  param: str) -> None:
    h, _, did = deferred_session()
    items, version = table_items(), h.state().header.version
    body = {"session_id": h.session_id, "decision_id": did, **answer}
    status, reply = call_api("POST", "/v1/workers/submit", {k: v for k, v in body.items() if v is not None},
                             origin="machine")
    assert_error(status, reply, 400, param=param)
    assert table_items() == items and h.state().header.version == version
    assert h.state().decisions[did].status == "pending"
