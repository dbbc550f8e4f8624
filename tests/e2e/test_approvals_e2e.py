"""Approvals you can trust (A1, A3, A4) over HTTP on the local stack: the real handlers, DynamoDB,
Step Functions holding the branch, and a signed HTTP worker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.security.probes import refusal, table_count
from tests.stack import (
    Api,
    declare_agent,
    execution_status,
    resumed_triggers,
    seed_worker,
    wait_execution,
    worker_with_schema,
)

APPROVAL = {"type": "object", "required": ["approved"],
            "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}}}


@pytest.fixture
def schema_worker(api: Api, worker: Any) -> Iterator[list[dict[str, Any]]]:
    """The seed worker, except its `confirm` interrupt carries a response schema."""
    with worker_with_schema(api, APPROVAL) as seen:
        yield seen


# --- A1 -------------------------------------------------------------------------------------


def test_a1_worker_schema_refuses_a_bad_answer_over_http(api: Api, stack: Any,
                                                           schema_worker: list[dict[str, Any]]) -> None:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    assert interrupt["response_schema"] == APPROVAL
    wait_execution(stack, sid, iid, "RUNNING")
    before, events = table_count(stack), len(api.events(sid))
    refusal(api.resume(sid, iid, {"approved": "yes"}), 400, code="invalid_resume", param="payload.approved")
    refusal(api.resume(sid, iid, {"note": "ok"}), 400, code="invalid_resume", param="payload")
    as_input = api.req("POST", f"/v1/sessions/{sid}/inputs",
                       {"type": "interrupt.resume", "interrupt_id": iid, "payload": {"approved": 1}})
    refusal(as_input, 400, code="invalid_resume", param="payload.approved")
    agui = {"status": "resolved", "payload": {"approved": "no"}, "responder": {"name": "ann"}}
    refusal(api.resume(sid, iid, agui), 400, code="invalid_resume", param="payload.payload.approved")
    # Nothing recorded, the interrupt still open, the task token not spent.
    assert table_count(stack) == before and len(api.events(sid)) == events
    assert api.view(sid)["status"] == "interrupted"
    assert execution_status(stack, sid, iid) == "RUNNING"
    good = api.resume(sid, iid, {"approved": True})
    assert good.status_code == 200 and good.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    view = api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    assert view["messages"][2]["content"] == "sent"
    assert [t["payload"] for t in resumed_triggers(schema_worker, sid)] == [{"approved": True}]


def test_a1_api_raise_with_a_response_schema_over_http(api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    before = table_count(stack)
    bad = {"reason": "review", "response_schema": {"type": "nope"}}
    refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts", bad), 400, code="validation_error",
            param="response_schema")
    bad_agui = {"reason": "review", "payload": {"responseSchema": {"required": "approved"}}}
    refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts", bad_agui), 400, code="validation_error",
            param="payload")
    assert table_count(stack) == before
    raised = api.ok("POST", f"/v1/sessions/{sid}/interrupts",
                    {"reason": "review", "interrupt_id": "int-review", "payload": {"responseSchema": APPROVAL}})
    assert raised["interrupt"]["response_schema"] == APPROVAL
    api.wait_status(sid, "interrupted")
    refusal(api.resume(sid, "int-review", {"approved": "yes"}), 400, code="invalid_resume",
            param="payload.approved")
    # A cancelled AG-UI answer is not checked.
    out = api.resume(sid, "int-review", {"status": "cancelled", "payload": None})
    assert out.status_code == 200 and out.json()["noop"] is False
    api.wait(sid, lambda v: v["interrupts"] == [])


# --- A4 -------------------------------------------------------------------------------------


def test_a4_a_repeated_resume_tells_the_truth_over_http(api: Api, stack: Any) -> None:
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    first = api.resume(sid, iid, {"approved": True, "note": "fine"})
    assert first.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    api.wait_status(sid, "done")
    same = api.resume(sid, iid, {"note": "fine", "approved": True}).json()
    assert same["noop"] is True and same["interrupt_id"] == iid
    assert same["resolved"]["by"] == {"subject": stack.subject, "origin": stack.origin}
    assert same["resolved"]["status"] == "resolved" and same["resolved"]["same_payload"] is True
    assert same["resolved"]["at"].endswith("Z")
    other = api.resume(sid, iid, {"approved": False}).json()
    assert other["noop"] is True and other["resolved"]["same_payload"] is False
    unknown = api.resume(sid, "int-unknown", {}).json()
    assert unknown == {"ok": True, "interrupt_id": "int-unknown", "noop": True, "known": False}
    assert len([e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]) == 1


def test_a1_a4_the_readme_walkthrough_over_http(api: Api, stack: Any) -> None:
    """The walkthrough's "Resume" step (README) and "Answers checked against a schema" (docs/WALKTHROUGH.md),
    request for request."""
    sid = api.start("Email Bob that the report is ready")
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    assert api.resume(sid, iid, {"approved": True}).json() == {"ok": True, "interrupt_id": iid, "noop": False}
    again = api.resume(sid, iid, {"approved": False}).json()
    assert again["noop"] is True and again["resolved"]["same_payload"] is False
    assert again["resolved"]["by"] == {"subject": stack.subject, "origin": stack.origin}
    api.wait_status(sid, "done")
    api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "interrupt_id": "int-review",
                                                      "response_schema": APPROVAL})
    bad = refusal(api.resume(sid, "int-review", {"approved": "yes"}), 400, code="invalid_resume",
                  param="payload.approved")
    assert "'yes' is not of type 'boolean'" in bad["message"]
    good = api.resume(sid, "int-review", {"approved": True})
    assert good.status_code == 200 and good.json() == {"ok": True, "interrupt_id": "int-review", "noop": False}


# --- A3 -------------------------------------------------------------------------------------


def test_a3_a_stale_fingerprint_is_refused_over_http_and_the_session_keeps_its_agent_config(
        api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    seen = worker[1]
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid, action = interrupt["interrupt_id"], interrupt["action"]
    assert action["tool"] == "send_email" and action["arguments"] == '{"to":"bob"}'
    assert len(action["agent_version"]) == 64 and len(action["fingerprint"]) == 64
    inbox = [i for i in api.ok("GET", "/v1/interrupts")["interrupts"] if i["interrupt_id"] == iid]
    assert inbox and inbox[0]["action"] == action
    wait_execution(stack, sid, iid, "RUNNING")
    before, events = table_count(stack), len(api.events(sid))
    stale = {"payload": {"approved": True}, "expect_fingerprint": "0" * 64}
    out = refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", stale), 409,
                  code="stale_approval", param="expect_fingerprint")
    assert out["fingerprint"] == action["fingerprint"]
    as_input = {"type": "interrupt.resume", "interrupt_id": iid, **stale}
    refusal(api.req("POST", f"/v1/sessions/{sid}/inputs", as_input), 409, code="stale_approval")
    assert table_count(stack) == before and len(api.events(sid)) == events
    assert api.view(sid)["status"] == "interrupted" and execution_status(stack, sid, iid) == "RUNNING"
    # The agent is declared again with another worker and other tools: the parked session keeps its own.
    other_server, other_seen = seed_worker.serve(0, os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    try:
        declare_agent(api, f"http://127.0.0.1:{other_server.server_address[1]}/",
                      tools=[{"name": "lookup", "input": {"type": "object"}}])
        assert api.view(sid)["interrupts"][0]["action"] == action
        good = {"payload": {"approved": True}, "expect_fingerprint": action["fingerprint"]}
        resp = api.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", good)
        assert resp.status_code == 200 and resp.json() == {"ok": True, "interrupt_id": iid, "noop": False}
        view = api.wait_status(sid, "done")
        wait_execution(stack, sid, iid, "SUCCEEDED")
        assert view["messages"][2]["content"] == "sent"
        assert [t["payload"] for t in resumed_triggers(seen, sid)] == [{"approved": True}]
        assert [r for r in other_seen if r["session_id"] == sid] == []
    finally:
        other_server.shutdown()
