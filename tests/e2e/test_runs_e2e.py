"""External runs over HTTP on the local stack (PROTOCOL.md §10): a run's answers reach a signed URL
all together, a failed attempt retried under the same delivery id; a run with no target reads its
own answers; a run is its caller's alone (another tenant reads 404, the same run id with another
agent is 409); a bad raise names its field and records nothing. A customer's Step Functions wait
is tests/e2e/test_step_functions_wait_e2e.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.test_notify_e2e import SECRET_REF, Receiver
from tests.stack import Api
from tests.waiting import wait_for


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"], fail=1)  # the first attempt fails: retried
    yield out
    out.server.shutdown()


@pytest.fixture
def runner(api: Api, receiver: Receiver) -> Api:
    """An agent for external runs: a Step Functions target and a signed URL target."""
    api.ok("PUT", "/v1/agents/payments", {"run_targets": {
        "workflow": {"step_functions": True},
        "hook": {"url": receiver.url, "secret": SECRET_REF}}})
    return api


def asked(*ids: str) -> list[dict[str, Any]]:
    return [{"interrupt_id": i, "reason": "approve", "payload": {"message": f"Pay {i}?"},
             "action": {"tool": "pay", "arguments": {"invoice": i}}} for i in ids]


def test_a_runs_answers_reach_a_signed_url_all_together_retried_under_one_id(
        stack: Any, runner: Api, receiver: Receiver) -> None:
    run_id = f"graph-{uuid.uuid4().hex[:12]}"
    raised = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {
        "agent_id": "payments", "target": "hook", "deliver": "all", "state": {"thread": "t-9"},
        "interrupts": asked("inv-1", "inv-2")})
    again = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {  # a retried request raises nothing twice
        "agent_id": "payments", "target": "hook", "deliver": "all", "state": {"thread": "t-9"},
        "interrupts": asked("inv-1", "inv-2")})
    assert again["session_id"] == raised["session_id"]
    sid = raised["session_id"]
    assert runner.resume(sid, "inv-1", {"approved": True}).status_code == 200
    assert runner.resume(sid, "inv-2", {"approved": False}).status_code == 200
    got = wait_for(lambda: list(receiver.got) if len(receiver.got) >= 2 else None, "the run's delivery, retried")
    failed, delivery = got  # refused once (500), delivered again under the same id for the receiver to dedupe
    assert failed["body"] == delivery["body"] and failed["delivery"] == delivery["delivery"]
    assert delivery["signed"] and delivery["delivery"] == delivery["body"]["delivery_id"]
    assert [(a["interrupt_id"], a["verdict"]) for a in delivery["body"]["answers"]] == [
        ("inv-1", "approved"), ("inv-2", "denied")]
    assert delivery["body"]["state"] == {"thread": "t-9"}
    view = runner.ok("GET", f"/v1/runs/{run_id}")
    assert [i["verdict"] for i in view["interrupts"]] == ["approved", "denied"]
    raised_events = [e for e in runner.events(sid) if e["type"] == "session.interrupted"]
    assert len(raised_events) == 2


def test_a_run_with_no_target_reads_its_answer(stack: Any, runner: Api) -> None:
    run_id = f"agent-{uuid.uuid4().hex[:12]}"
    raised = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "payments",
                                                                 "interrupts": asked("inv-3")})
    assert runner.ok("GET", f"/v1/runs/{run_id}")["interrupts"][0]["status"] == "open"
    assert runner.resume(raised["session_id"], "inv-3", {"approved": True}).status_code == 200
    view = runner.ok("GET", f"/v1/runs/{run_id}")
    assert (view["interrupts"][0]["status"], view["interrupts"][0]["verdict"]) == ("resolved", "approved")


def test_a_run_is_its_callers_alone(stack: Any, runner: Api, other_tenant: Api) -> None:
    run_id = f"mine-{uuid.uuid4().hex[:12]}"
    runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "payments", "interrupts": asked("inv-4")})
    assert other_tenant.req("GET", f"/v1/runs/{run_id}").status_code == 404
    refused = runner.req("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "assistant",
                                                                   "interrupts": asked("inv-5")})
    assert (refused.status_code, refused.json()["error"]["param"]) == (409, "run_id")


@pytest.mark.parametrize(("change", "param"), [
    ({"target": "nowhere"}, "target"),
    ({"target": "workflow"}, "callback.task_token"),
    ({"callback": {"task_token": "x"}}, "target"),
    ({"target": "workflow", "deliver": "each", "callback": {"task_token": "x"}}, "deliver"),
    ({"interrupts": []}, "interrupts"),
])
def test_a_bad_run_raise_names_the_field_and_records_nothing(stack: Any, runner: Api, change: dict[str, Any],
                                                             param: str) -> None:
    run_id = f"bad-{uuid.uuid4().hex[:12]}"
    refused = runner.req("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "payments",
                                                                   "interrupts": asked("inv-6"), **change})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == param, refused.text
    assert runner.req("GET", f"/v1/runs/{run_id}").status_code == 404


