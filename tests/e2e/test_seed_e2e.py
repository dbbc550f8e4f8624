"""The seed example and the foundation rules end to end: HTTP -> API Gateway-shaped front end ->
handlers -> moto (DynamoDB, SQS FIFO, Step Functions really executing ParkBranch) -> pollers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.stack import Api, resumed_triggers, wait_execution


@pytest.mark.parametrize("approved", [True, False], ids=["approve", "decline"])
def test_r8_seed_example_end_to_end(api: Api, stack: Any, worker: Any, approved: bool) -> None:
    _, seen = worker
    sid = api.start()
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    iid = interrupt["interrupt_id"]
    assert interrupt["reason"] == "confirm" and interrupt["payload"] == {"message": "Send the email?"}
    wait_execution(stack, sid, iid, "RUNNING")  # the task token is held; no compute runs
    out = api.resume(sid, iid, {"approved": approved})
    assert out.status_code == 200 and out.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    view = api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    [resumed] = resumed_triggers(seen, sid)
    assert resumed["payload"] == {"approved": approved}
    roles = [m["role"] for m in view["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert view["messages"][2]["content"] == ("sent" if approved else "declined")
    assert view["messages"][3]["content"] == ("Email sent." if approved else "I did not send it.")


def test_r7_duplicate_unknown_and_concurrent_resumes_are_noops(api: Api, stack: Any, worker: Any) -> None:
    _, seen = worker
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    unknown = api.resume(sid, "int-unknown", {"approved": True})
    assert unknown.status_code == 200 and unknown.json()["noop"] is True
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda _: api.resume(sid, iid, {"approved": True}), range(50)))
    assert all(a.status_code == 200 for a in answers)
    assert sorted(a.json()["noop"] for a in answers) == [False] + [True] * 49
    api.wait_status(sid, "done")
    again = api.resume(sid, iid, {"approved": False})
    assert again.json()["noop"] is True
    assert len(resumed_triggers(seen, sid)) == 1
    assert len([e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]) == 1


def test_r14_parked_session_reads_interrupted_with_its_open_interrupt(api: Api, stack: Any) -> None:
    sid = api.start()
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    assert set(interrupt) >= {"interrupt_id", "origin", "reason", "payload", "anchor", "created_at"}
    assert interrupt["anchor"] == view["head_id"]
    # The park is the engine's next step after the commit that raised it: wait for it, never assume it.
    wait_execution(stack, sid, interrupt["interrupt_id"], "RUNNING")


def test_r9_message_on_the_parked_branch_gets_409_over_http(api: Api) -> None:
    sid = api.start()
    view = api.wait_status(sid, "interrupted")
    resp = api.req("POST", f"/v1/sessions/{sid}/inputs",
                   {"type": "client.message", "message": {"role": "user", "content": "hello?"}})
    assert resp.status_code == 409
    assert resp.json()["error"]["code"] == "interrupted"
    assert resp.json()["error"]["interrupt_ids"] == [view["interrupts"][0]["interrupt_id"]]
    # Nothing recorded: no message, no turn. (The version may move: the park token lands meanwhile.)
    assert api.view(sid)["messages"] == view["messages"]
    assert [e for e in api.events(sid) if e["type"] in ("turn.started", "message.added")][-1]["seq"] < \
        [e for e in api.events(sid) if e["type"] == "session.interrupted"][0]["seq"]


def test_r11_branch_away_and_back_over_http(api: Api, worker: Any) -> None:
    _, seen = worker
    sid = api.start()
    parked = api.wait_status(sid, "interrupted")
    iid = parked["interrupts"][0]["interrupt_id"]
    api.ok("POST", f"/v1/sessions/{sid}/inputs",
           {"type": "client.messages", "messages": [{"role": "user", "content": "Just say hi"}]})
    view = api.wait(sid, lambda v: v["status"] == "done" and v["messages"][-1].get("content") == "Hi!")
    assert [i["interrupt_id"] for i in view["interrupts"]] == [iid]
    back = [{"id": m["id"], "role": m["role"]} for m in parked["messages"]]
    api.ok("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.messages", "messages": back})
    assert api.wait_status(sid, "interrupted")["head_id"] == parked["head_id"]
    api.resume(sid, iid, {"approved": True})
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
    assert len(resumed_triggers(seen, sid)) == 1


def test_r13_pause_survives_a_restart_of_front_end_and_pollers(local_stack_factory: Any, stack: Any, api: Api,
                                                               worker: Any) -> None:
    _, seen = worker
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")
    stack.stop(keep_moto=True)  # every "Lambda" process goes away; moto (AWS) keeps the state
    restarted = local_stack_factory(extra_env={"POWERTOOLS_METRICS_DISABLED": "true",
                                               "POWERTOOLS_LOG_LEVEL": "WARNING"})
    fresh = Api(restarted.base_url, restarted.api_key)
    assert fresh.view(sid)["status"] == "interrupted"
    assert fresh.resume(sid, iid, {"approved": True}).json()["noop"] is False
    assert fresh.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
    wait_execution(restarted, sid, iid, "SUCCEEDED")
    assert len(resumed_triggers(seen, sid)) == 1


def test_r16_expiry_by_the_step_functions_timeout(api: Api, stack: Any, worker: Any) -> None:
    _, seen = worker
    from tests.stack import declare_agent

    declare_agent(api, worker[0], interrupt_expires_in=2)
    sid = api.start()
    view = api.wait_status(sid, "interrupted")
    iid = view["interrupts"][0]["interrupt_id"]
    assert view["interrupts"][0]["expires_at"]
    final = api.wait_status(sid, "done", timeout=90)
    [resumed] = resumed_triggers(seen, sid)
    assert resumed["payload"] == {"status": "cancelled", "reason": "expired"}
    assert final["messages"][-1]["content"] == "I did not send it."
    assert api.resume(sid, iid, {"approved": True}).json()["noop"] is True
    cleared = [e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]
    assert cleared[0]["data"]["expired"] is True


def test_r17_other_tenant_gets_404_everywhere(api: Api, other_tenant: Api) -> None:
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    for method, path, body in (
        ("GET", f"/v1/sessions/{sid}", None),
        ("GET", f"/v1/sessions/{sid}/events", None),
        ("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": {"approved": True}}),
        ("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": iid}),
        ("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "x"}),
    ):
        resp = other_tenant.req(method, path, body)
        assert resp.status_code == 404, (method, path, resp.text)
    assert other_tenant.ok("GET", "/v1/interrupts?status=open")["interrupts"] == []
    assert api.view(sid)["status"] == "interrupted"


def test_inbox_lists_open_interrupts_newest_first_and_drops_resolved(api: Api) -> None:
    first = api.start()
    api.wait_status(first, "interrupted")
    second = api.start()
    api.wait_status(second, "interrupted")
    inbox = api.ok("GET", "/v1/interrupts?status=open")["interrupts"]
    assert [i["session_id"] for i in inbox][:2] == [second, first]
    iid = inbox[0]["interrupt_id"]
    api.resume(second, iid, {"approved": True})
    inbox = api.ok("GET", "/v1/interrupts?status=open")["interrupts"]
    assert second not in [i["session_id"] for i in inbox]


def test_unauthenticated_requests_are_401(stack: Any) -> None:
    import requests

    resp = requests.get(stack.base_url + "/v1/interrupts", timeout=10)
    assert resp.status_code == 401
    bad = requests.get(stack.base_url + "/v1/interrupts", headers={"Authorization": "Bearer nope"}, timeout=10)
    assert bad.status_code in (401, 403)




def test_client_jwt_through_the_authorizer_reaches_only_its_own_sessions(stack: Any, api: Api) -> None:
    from holdpoint.services.tokens import mint_client_token

    secret = stack.client("secretsmanager").get_secret_value(SecretId=stack.env["JWT_SECRET_ARN"])["SecretString"]
    alice = Api(stack.base_url, mint_client_token(secret, "dev", "alice"))
    bob = Api(stack.base_url, mint_client_token(secret, "dev", "bob"))
    sid = alice.start()
    iid = alice.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    assert bob.req("GET", f"/v1/sessions/{sid}").status_code == 404
    assert bob.resume(sid, iid, {"approved": True}).status_code == 404
    assert bob.ok("GET", "/v1/interrupts?status=open")["interrupts"] == []
    assert [i["interrupt_id"] for i in alice.ok("GET", "/v1/interrupts?status=open")["interrupts"]] == [iid]
    assert alice.resume(sid, iid, {"approved": True}).json()["noop"] is False
    assert alice.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
    expired = Api(stack.base_url, mint_client_token(secret, "dev", "alice", ttl_secs=-10))
    assert expired.req("GET", f"/v1/sessions/{sid}").status_code in (401, 403)
