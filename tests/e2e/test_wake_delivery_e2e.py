"""Over HTTP on the local stack, R8's wake delivers in the step that commits it: while the worker
has `interrupt.resumed` nothing of the wake is recorded yet, and afterwards the wake and the
answer are recorded once; a worker that answers 202 may submit its answer before the wake is
recorded (docs/ARCHITECTURE.md, PROTOCOL.md §2.9)."""

from __future__ import annotations

from typing import Any

from holdpoint.aws.keys import put_api_key
from tests.stack import Api, seed_worker, worker_answering


def parked(api: Api) -> tuple[str, str]:
    sid = api.start("Email Bob")
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    return sid, interrupt["interrupt_id"]


def test_r8_the_wake_is_recorded_with_the_workers_answer(api: Api, stack: Any) -> None:
    recorded_then: list[list[str]] = []

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> Any:
        if trigger["type"] == "interrupt.resumed":
            recorded_then.append([e["type"] for e in api.events(self.seen[-1]["session_id"])])
        return seed_worker.decide(trigger, proposed)

    with worker_answering(api, answer) as seen:
        sid, iid = parked(api)
        assert api.resume(sid, iid, {"approved": True}).status_code == 200
        view = api.wait_status(sid, "done")
    assert view["messages"][-1]["content"] == "Email sent."
    [before] = recorded_then
    assert before and "session.interrupt_resumed" not in before
    [resumed] = [r for r in seen if r["trigger"]["type"] == "interrupt.resumed"]
    types = [e["type"] for e in api.events(sid)]
    assert types.count("session.interrupt_resumed") == 1
    delivered = [e for e in api.events(sid) if e["type"] == "decision.delivered"
                 and e["data"]["decision_id"] == resumed["decision_id"]]
    assert len(delivered) == 1


def test_r8_a_worker_answering_202_submits_before_the_wake_is_recorded(api: Api, stack: Any) -> None:
    put_api_key(stack.env["TABLE_NAME"], "hp_wake_machine_key", stack.tenant, "backend", "machine")
    backend = Api(stack.base_url, "hp_wake_machine_key")
    submitted: list[tuple[int, Any]] = []

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> Any:
        if trigger["type"] != "interrupt.resumed":
            return seed_worker.decide(trigger, proposed)
        request = self.seen[-1]
        body = {"session_id": request["session_id"], "decision_id": request["decision_id"],
                **seed_worker.decide(trigger, proposed)}
        resp = backend.req("POST", "/v1/workers/submit", body)  # before answering 202: the wake is in flight
        submitted.append((resp.status_code, resp.json()))
        return seed_worker.LATER

    with worker_answering(api, answer) as seen:
        sid, iid = parked(api)
        assert api.resume(sid, iid, {"approved": True}).status_code == 200
        view = api.wait_status(sid, "done")
    assert view["messages"][-1]["content"] == "Email sent."
    [resumed] = [r for r in seen if r["trigger"]["type"] == "interrupt.resumed"]
    assert submitted == [(200, {"ok": True, "session_id": sid, "decision_id": resumed["decision_id"],
                                "noop": False})]
    events = api.events(sid)
    assert [e["type"] for e in events].count("session.interrupt_resumed") == 1
    assert not [e for e in events if e["type"] == "decision.deferred"
                and e["data"]["decision_id"] == resumed["decision_id"]]
