"""Quotas (docs/SECURITY.md, "Quotas"), attacked over HTTP on the local stack: one caller holding
every stream wait, one end user raising interrupts without end, a tenant's raises racing its
limit, and sessions started faster than allowed. Each stack sets its own low limits as template
parameters; outcomes are checked, never timings."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, declare_agent, worker_answering
from tests.waiting import wait_for

Limited = Callable[..., tuple[Any, Api]]
PAYLOAD = {"note": "x" * 16_000}


@pytest.fixture
def limited(local_stack_factory: Callable[..., Any], worker: tuple[str, Any]) -> Limited:
    """A stack with quota parameters of its own (template parameter name -> value), and the
    tenant's API client on it with the assistant declared."""

    def start(**parameters: int) -> tuple[Any, Api]:
        stack = local_stack_factory(
            parameters={name: str(value) for name, value in parameters.items()}, max_instances=12,
            extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})
        api = Api(stack.base_url, stack.api_key)
        declare_agent(api, worker[0])
        return stack, api

    return start


def quota_refusal(resp: Any, limit: str) -> None:
    refusal(resp, 429, code="quota_exceeded", param=limit)
    assert int(resp.headers["Retry-After"]) >= 1


def idle_session(api: Api) -> str:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    return sid


def raise_on(api: Api, sid: str, **extra: Any) -> Any:
    return api.req("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "payload": PAYLOAD, **extra})


def test_quota_one_callers_stream_waits_stop_at_its_limit_and_another_tenant_is_answered(
        limited: Limited, other_tenant: Any) -> None:
    stack, api = limited(QuotaStreamWaitsPerCaller=2)
    sid = idle_session(api)
    after = api.events(sid)[-1]["seq"]
    mallory = client_token_api(stack, "dev-user", session_id=sid)  # the backend granted it this session
    url = f"/v1/sessions/{sid}/events?after_seq={after}&wait=12"
    other = Api(stack.base_url, "hp_other_tenant_key")
    with ThreadPoolExecutor(max_workers=8) as pool:
        waits: list[Future[Any]] = [pool.submit(mallory.req, "GET", url) for _ in range(8)]
        refused = wait_for(lambda: [f for f in waits if f.done()] if sum(f.done() for f in waits) >= 6 else None,
                           "the waits past the limit to be refused")
        for f in refused:
            quota_refusal(f.result(), "stream_waits_per_caller")
        held = [f for f in waits if not f.done()]
        assert len(held) == 2
        assert other.req("GET", "/v1/sessions").status_code == 200  # answered while the two still wait
        assert not any(f.done() for f in held)
        api.ok("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.message",
                                                        "message": {"role": "user", "content": "say hi"}})
        answered = [f.result() for f in held]  # a new event ends both waits
    assert all(r.status_code == 200 and r.json()["events"] for r in answered)
    # The leases went back with the answers: the caller may wait again.
    assert mallory.req("GET", f"/v1/sessions/{sid}/events?after_seq=0&wait=1").status_code == 200


def shard_leases(stack: Any) -> int:
    """The live leases the deployment's wait holders (`QUOTA#W#<shard>`) hold."""
    items = stack.client("dynamodb").scan(TableName=stack.env["TABLE_NAME"])["Items"]
    return sum(len(i["l"]["M"]) for i in items if i["PK"]["S"].startswith("QUOTA#W#") and "l" in i)


def test_quota_waits_of_all_tenants_stop_at_the_total_and_serving_keeps_its_instances(
        local_stack_factory: Callable[..., Any], worker: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting never starves serving: with the API function at 3 instances and the deployment's
    waits at 2, one tenant holding 2 waits (under its own limits) leaves another tenant's wait
    refused at once and its reads answered, on the third instance."""
    # the other tenant's agent names the worker's secret under a variable of its own (a variable two
    # tenants' patterns match is neither's)
    monkeypatch.setenv("HOLDPOINT_OTHER_WORKER_SECRET", os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    both = "dev=HOLDPOINT_E2E_WORKER_SECRET,other=HOLDPOINT_OTHER_WORKER_SECRET"
    stack = local_stack_factory(parameters={"QuotaStreamWaitsTotal": "2"}, max_instances=3,
                                extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
                                           "HOLDPOINT_SECRET_ENV_ALLOWLIST": both})
    api = Api(stack.base_url, stack.api_key)
    declare_agent(api, worker[0])
    sid = idle_session(api)
    after = api.events(sid)[-1]["seq"]
    put_api_key(stack.env["TABLE_NAME"], "hp_other_tenant_key", "other", "mallory", "operator")
    other = Api(stack.base_url, "hp_other_tenant_key")
    declare_agent(other, worker[0], worker={"url": worker[0], "secret": "env:HOLDPOINT_OTHER_WORKER_SECRET"})
    theirs = idle_session(other)
    with ThreadPoolExecutor(max_workers=2) as pool:
        held = [pool.submit(api.req, "GET", f"/v1/sessions/{sid}/events?after_seq={after}&wait=12") for _ in range(2)]
        wait_for(lambda: shard_leases(stack) == 2, "the two waits to hold the deployment's leases")
        quota_refusal(other.req("GET", f"/v1/sessions/{theirs}/events?after_seq=999&wait=5"), "stream_waits_total")
        assert other.req("GET", "/v1/sessions").status_code == 200  # served while the two still wait
        assert not any(f.done() for f in held)
        api.ok("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.message",
                                                        "message": {"role": "user", "content": "say hi"}})
        assert all(f.result().status_code == 200 for f in held)
    assert shard_leases(stack) == 0


def test_quota_raises_on_one_session_stop_at_the_session_limit_and_record_nothing(limited: Limited) -> None:
    stack, api = limited(QuotaOpenInterruptsPerSession=5)
    sid = idle_session(api)
    mallory = client_token_api(stack, "dev-user", session_id=sid)  # the backend granted it this session
    answers = [raise_on(mallory, sid) for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5
    before = table_count(stack)
    for _ in range(45):
        quota_refusal(raise_on(mallory, sid), "open_interrupts_per_session")
    assert table_count(stack) == before
    assert len(api.view(sid)["interrupts"]) == 5


def test_quota_tenant_wide_open_interrupts_race_records_exactly_the_limit(limited: Limited) -> None:
    stack, api = limited(QuotaOpenInterruptsPerTenant=4)
    sids = [idle_session(api) for _ in range(10)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda sid: raise_on(api, sid), sids))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] * 4 + [429] * 6, codes
    for a in answers:
        if a.status_code == 429:
            quota_refusal(a, "open_interrupts_per_tenant")
    assert len(api.ok("GET", "/v1/interrupts?limit=100")["interrupts"]) == 4
    assert sum(len(api.view(sid)["interrupts"]) for sid in sids) == 4


def resumed(api: Api, sid: str, count: int = 1) -> bool:
    return len([e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]) >= count


def test_quota_resolving_or_expiring_an_interrupt_frees_its_slot(limited: Limited) -> None:
    stack, api = limited(QuotaOpenInterruptsPerTenant=2)
    a, b, c = (idle_session(api) for _ in range(3))
    first = raise_on(api, a).json()["interrupt_id"]
    assert raise_on(api, b, expires_in=1).status_code == 200
    quota_refusal(raise_on(api, c), "open_interrupts_per_tenant")
    assert api.resume(a, first, {"approved": True}).status_code == 200
    wait_for(lambda: resumed(api, a), "the resolved interrupt's wake")
    assert raise_on(api, c).status_code == 200  # the resolved one's slot
    quota_refusal(raise_on(api, a), "open_interrupts_per_tenant")
    wait_for(lambda: resumed(api, b), "the expiry's wake", timeout=90)
    assert raise_on(api, a).status_code == 200  # the expired one's slot


def test_quota_sessions_started_past_the_per_second_limit_are_refused(limited: Limited) -> None:
    stack, api = limited(QuotaSessionsPerSecond=2)
    body = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": "say hi"}}
    first = int(time.time())
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda _: api.req("POST", "/v1/sessions", body), range(20)))
    seconds = int(time.time()) - first + 1  # the seconds the requests spanned
    accepted = [a for a in answers if a.status_code == 202]
    for a in answers:
        if a.status_code != 202:
            quota_refusal(a, "sessions_per_second")
    assert 1 <= len(accepted) <= 2 * seconds < len(answers)
    assert len(api.ok("GET", "/v1/sessions?limit=100")["sessions"]) == len(accepted)


def test_quota_a_worker_raising_past_the_session_limit_fails_its_decision_and_parks_nothing(
        limited: Limited) -> None:
    stack, api = limited(QuotaOpenInterruptsPerSession=1)

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any] | None:
        if trigger["type"] == "session.start" or trigger["type"] == "client.messages" or \
                trigger["type"] == "client.message":
            return {"actions": [{"type": "interrupt", "reason": "one"}, {"type": "interrupt", "reason": "two"}]}
        return proposed

    with worker_answering(api, answer):
        sid = api.start("anything")
        failed = wait_for(lambda: [e for e in api.events(sid) if e["type"] == "decision.failed"], "the refusal")
    assert failed[0]["data"]["error"]["code"] == "quota_exceeded"
    assert failed[0]["data"]["error"]["param"] == "open_interrupts_per_session"
    assert api.view(sid)["interrupts"] == []
