"""AWS's refusals under load, at every AWS call site a scenario reaches, over HTTP on the local
stack (holdpoint_local.faults; docs/OPERATIONS.md, "Failures AWS returns").

Each scenario runs once fault-free, which records the (function, service, operation) call sites it
reaches, then once with a burst of AWS's refusals at every one of those sites (the code and the
burst's length drawn from a fixed seed: bursts shorter than the client's attempts are absorbed by
botocore's retries, longer ones surface to Holdpoint's code). Then the faults stop, and the
session must end as the fault-free one did: the same conversation and interrupt outcomes, events
numbered without gaps or repeats, one tool result per call; and every HTTP answer the client got
was a 2xx, a 4xx, or a 503/429 with `Retry-After`, never a 500.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
import requests

from holdpoint.aws import clients
from holdpoint_local.faults import Faults, refusals_for
from tests.stack import Api, declare_agent

SEED = 22
CLIENT_RETRIES = 20  # a client's retries of one request answered 503/429 (bounded)


class ChaosApi(Api):
    """A client that sends a request again when told to retry later, with the same
    `Idempotency-Key` (one per request, as a careful client sends), and records every answer."""

    statuses: Counter[int]
    bad: list[str]

    def req(self, method: str, path: str, body: Any = None) -> requests.Response:
        headers = {"Idempotency-Key": uuid.uuid4().hex} if method == "POST" else {}
        for _ in range(CLIENT_RETRIES):
            resp = self.http.request(method, self.base + path, json=body, headers=headers, timeout=60)
            self.statuses[resp.status_code] += 1
            if resp.status_code >= 500 and not (resp.status_code == 503 and resp.headers.get("Retry-After")):
                self.bad.append(f"{method} {path}: {resp.status_code} {resp.text[:200]}")
            if resp.status_code not in (429, 503):
                return resp
            if not resp.headers.get("Retry-After"):
                self.bad.append(f"{method} {path}: {resp.status_code} without Retry-After")
        return resp


def chaos_api(stack: Any) -> ChaosApi:
    api = ChaosApi(stack.base_url, stack.api_key)
    api.statuses, api.bad = Counter(), []
    return api


@pytest.fixture
def faults() -> Iterator[Faults]:
    """Installed on boto3's default session before the stack builds its clients."""
    injector = Faults(seed=SEED).install(boto3.DEFAULT_SESSION or boto3._get_default_session())
    yield injector
    injector.stop()
    injector.uninstall()


@pytest.fixture
def chaos_stack(faults: Faults, local_stack_factory: Callable[..., Any], worker: Any) -> Any:
    return local_stack_factory(extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "ERROR"})


def seed_scenario(api: ChaosApi) -> str:
    """PROTOCOL.md's seed: a tool call parks on `confirm`, the resume approves, the email is sent."""
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    resumed = api.req("POST", f"/v1/sessions/{sid}/interrupts/{interrupt['interrupt_id']}/resume",
                      {"payload": {"approved": True}})
    assert resumed.status_code == 200, resumed.text
    api.wait_status(sid, "done")
    return sid


def repeated_resumes(api: ChaosApi) -> str:
    """The same resume sent three times: one wake, the rest no-ops."""
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    for _ in range(3):
        out = api.req("POST", f"/v1/sessions/{sid}/interrupts/{interrupt['interrupt_id']}/resume",
                      {"payload": {"approved": False}})
        assert out.status_code == 200, out.text
    api.wait_status(sid, "done")
    return sid


SCENARIOS: dict[str, Callable[[ChaosApi], str]] = {"seed": seed_scenario, "resumes": repeated_resumes}


def outcome(api: ChaosApi, sid: str) -> dict[str, Any]:
    """What a session ended as, without ids or times; and its events checked for gaps and repeats."""
    view = api.view(sid)
    events = api.ok("GET", f"/v1/sessions/{sid}/events?limit=500")["events"]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"event seq not contiguous: {seqs}"
    results = Counter(e.get("data", {}).get("call_id") for e in events if e["type"] == "tool.result")
    assert all(n == 1 for n in results.values()), f"a tool result recorded twice: {results}"
    return {"status": view["status"], "messages": [(m["role"], m.get("content")) for m in view["messages"]],
            "events": [e["type"] for e in events]}


def burst(rng: random.Random, service: str, operation: str) -> tuple[str, int]:
    """A refusal AWS gives this call, and how many attempts in a row it refuses: up to one more
    than the client's attempts, so some bursts are absorbed by botocore and some surface."""
    code = rng.choice(refusals_for(service, operation))
    attempts = clients.POLICIES.get(service, clients.POLICIES["dynamodb"]).attempts
    return code, rng.randint(1, attempts + 1)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_chaos_aws_refusals_at_every_call_site_lose_and_double_nothing(
        scenario: str, chaos_stack: Any, faults: Faults, worker: Any) -> None:
    run = SCENARIOS[scenario]
    api = chaos_api(chaos_stack)
    declare_agent(api, worker[0])
    faults.sites.clear()
    baseline = outcome(api, run(api))
    sites = sorted(site for site in faults.sites if site[0] is not None)
    assert sites, "the discovery pass saw no AWS call"
    rng = random.Random(f"{SEED}/{scenario}")
    plan = {}
    for function, service, operation in sites:
        code, count = burst(rng, service, operation)
        faults.inject(service, operation, code, function=function, first=count)
        plan[(function, service, operation)] = (code, count)
    faulted = chaos_api(chaos_stack)
    sid = run(faulted)
    faults.stop()
    assert outcome(faulted, sid) == baseline
    assert not faulted.bad, faulted.bad
    assert not api.bad, api.bad
    fired = sum(faults.injected.values())
    assert fired, "no fault was injected"
    print(f"\n{scenario}: {len(sites)} call sites, {fired} refusals injected, answers {dict(faulted.statuses)}")
    for site, (code, count) in sorted(plan.items(), key=str):
        print(f"  {site}: {code} x{count}")


@pytest.mark.timeout(120)
def test_chaos_kick_refused_past_its_attempts_records_nothing_twice_on_the_resend(
        chaos_stack: Any, faults: Faults, worker: Any) -> None:
    """The kick after a new session's commit refused on every attempt: a 503 with `Retry-After`
    for an input that was recorded. The resend with the same `Idempotency-Key` finds that session
    (no second one), kicks it, and it runs to its end."""
    api = chaos_api(chaos_stack)
    declare_agent(api, worker[0])
    faults.inject("sqs", "SendMessage", "ThrottlingException", function="ApiFunction",
                  first=clients.POLICIES["sqs"].attempts)
    body = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": "Email Bob"}}
    first = api.http.post(api.base + "/v1/sessions", json=body, headers={"Idempotency-Key": "kick-1"}, timeout=60)
    assert first.status_code == 503 and first.headers.get("Retry-After"), first.text
    again = api.http.post(api.base + "/v1/sessions", json=body, headers={"Idempotency-Key": "kick-1"}, timeout=60)
    assert again.status_code == 202, again.text
    sid = again.json()["session_id"]
    assert [row["session_id"] for row in api.ok("GET", "/v1/sessions")["sessions"]] == [sid]
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    assert api.resume(sid, interrupt["interrupt_id"], {"approved": True}).status_code == 200
    api.wait_status(sid, "done")
    assert [row["session_id"] for row in api.ok("GET", "/v1/sessions")["sessions"]] == [sid]
