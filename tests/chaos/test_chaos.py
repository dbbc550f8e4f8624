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

import asyncio
import json
import os
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
import requests
from websockets.exceptions import InvalidStatus

from holdpoint.aws import clients
from holdpoint.aws.keys import put_api_key
from holdpoint_local.faults import Faults, refusals_for
from holdpoint_local.live_client import Follower
from tests.chaos.sites import REFUSED
from tests.stack import Api, declare_agent, seed_worker, signed
from tests.waiting import wait_for

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


def chaos_api(stack: Any, key: str | None = None) -> ChaosApi:
    api = ChaosApi(stack.base_url, key or stack.api_key)
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


class Run:
    """One pass of a scenario: its clients (the tenant's key, and approvers' keys) and the webhook
    deliveries it got."""

    def __init__(self, stack: Any, hook: Hook) -> None:
        self.stack, self.hook = stack, hook
        self.api = chaos_api(stack)
        self.clients = [self.api]

    def as_(self, subject: str) -> ChaosApi:
        """A client holding an operator API key of the stack's tenant for `subject`."""
        key = f"hp_chaos_{subject}"
        put_api_key(self.stack.env["TABLE_NAME"], key, self.stack.tenant, subject, "operator")
        client = chaos_api(self.stack, key)
        self.clients.append(client)
        return client

    @property
    def bad(self) -> list[str]:
        return [b for c in self.clients for b in c.bad]


def resume(api: ChaosApi, sid: str, iid: str, payload: Any) -> dict[str, Any]:
    out = api.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": payload})
    assert out.status_code == 200, out.text
    body: dict[str, Any] = out.json()
    return body


def seed_scenario(run: Run) -> str:
    """PROTOCOL.md's seed: a tool call parks on `confirm`, the resume approves, the email is sent."""
    sid = run.api.start()
    [interrupt] = run.api.wait_status(sid, "interrupted")["interrupts"]
    resume(run.api, sid, interrupt["interrupt_id"], {"approved": True})
    run.api.wait_status(sid, "done")
    return sid


def repeated_resumes(run: Run) -> str:
    """The same resume sent three times: one wake, the rest no-ops."""
    sid = run.api.start()
    [interrupt] = run.api.wait_status(sid, "interrupted")["interrupts"]
    for _ in range(3):
        resume(run.api, sid, interrupt["interrupt_id"], {"approved": False})
    run.api.wait_status(sid, "done")
    return sid


def two_tool_turn(run: Run) -> str:
    """One LLM reply with two tool calls: `lookup` answered at once, `send_email` parked on its
    confirmation; the resume sends it, and the turn reprompts once after both results."""
    sid = run.api.start("Look Bob up and email him")
    [interrupt] = run.api.wait_status(sid, "interrupted")["interrupts"]
    run.api.wait(sid, lambda v: any(m.get("tool_call_id") and m.get("content") == ADDRESS for m in v["messages"]))
    resume(run.api, sid, interrupt["interrupt_id"], {"approved": True})
    run.api.wait_status(sid, "done")
    return sid


def quorum(run: Run) -> str:
    """An interrupt needing two approvals (A2): Ann's is recorded, Bob's decides it."""
    ann, bob = run.as_("ann"), run.as_("bob")
    sid = run.api.start()
    [interrupt] = run.api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    resume(ann, sid, iid, {"approved": True})  # a resend of a 503 may answer `noop` (A4): either is 200
    [answer] = run.api.view(sid)["interrupts"][0]["approvals"]
    assert answer["subject"] == "ann"
    assert resume(ann, sid, iid, {"approved": True})["noop"] is True
    resume(bob, sid, iid, {"approved": True})
    run.api.wait_status(sid, "done")
    return sid


def expiry(run: Run) -> str:
    """An interrupt nobody answers expires with its declared outcome (A5): approved, so sent."""
    sid = run.api.start()
    run.api.wait_status(sid, "interrupted")
    run.api.wait_status(sid, "done", timeout=90)
    return sid


def notifications(run: Run) -> str:
    """The seed with a signed webhook and an email entry declared: the webhook gets the raise and
    the close, each delivery's first attempt answered 500 so its retry goes through a durable timer;
    the email goes through SES (its refusals are the faulted pass's)."""
    sid = seed_scenario(run)
    wait_for(lambda: {"interrupt.raised", "interrupt.resolved"} <= run.hook.delivered(sid), "both webhooks", 60)
    return sid


@dataclass(frozen=True)
class Scenario:
    run: Callable[[Run], str]
    agent: dict[str, Any] = field(default_factory=dict)
    """The agent's fields beyond the seed's (tests/stack.py's `declare_agent`)."""


TWO_TOOLS = {
    "llm": {"provider": "scripted", "script": [
        {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "lookup", "arguments": {"q": "bob"}},
                                                            {"name": "send_email", "arguments": {"to": "bob"}}]}},
        {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Email sent."}},
        {"when": {"role": "tool"}, "reply": {"content": "I did not send it."}}]},
    "tools": [{"name": "lookup", "input": {"type": "object"}},
              {"name": "send_email", "input": {"type": "object", "required": ["to"]}}]}
NOTIFY = {"notify": [{"url": "{hook}", "secret": "env:HOLDPOINT_E2E_WORKER_SECRET",
                      "events": ["interrupt.raised", "interrupt.resolved"]},
                     {"email": {"to": ["ops@example.com"]}, "events": ["interrupt.raised"]}],
          "retry": {"webhook": {"max_attempts": 5, "backoff_base_secs": 1}}}

SCENARIOS: dict[str, Scenario] = {
    "seed": Scenario(seed_scenario),
    "resumes": Scenario(repeated_resumes),
    "two_tools": Scenario(two_tool_turn, TWO_TOOLS),
    "quorum": Scenario(quorum, {"approval": {"subjects": ["ann", "bob"], "quorum": 2}}),
    "expiry": Scenario(expiry, {"interrupt_expires_in": 2, "interrupt_on_expiry": "approve"}),
    "notifications": Scenario(notifications, NOTIFY),
}


def sessions_of(api: ChaosApi) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = api.ok("GET", "/v1/sessions?limit=100")["sessions"]
    return rows


def outcome(run: Run, sid: str, before: set[str]) -> dict[str, Any]:
    """What a session ended as, without ids or times; its events checked for gaps and repeats; and
    the run started this one session alone (a resend recorded no second one)."""
    api = run.api
    made = [row for row in sessions_of(api) if row["session_id"] not in before]
    assert [row["session_id"] for row in made] == [sid], f"the run started {len(made)} sessions: {made}"
    view = api.view(sid)
    events = api.ok("GET", f"/v1/sessions/{sid}/events?limit=500")["events"]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"event seq not contiguous: {seqs}"
    results = Counter(e.get("data", {}).get("call_id") for e in events if e["type"] == "tool.result")
    assert all(n == 1 for n in results.values()), f"a tool result recorded twice: {results}"
    return {"status": view["status"], "messages": [(m["role"], m.get("content")) for m in view["messages"]],
            "events": [described(e) for e in events], "webhooks": run.hook.outcome(sid)}


def described(event: dict[str, Any]) -> str:
    """An event's type, and for a delivered decision the trigger it carried."""
    trigger = (event.get("data") or {}).get("trigger") if event["type"] == "decision.delivered" else None
    return f"{event['type']}:{trigger}" if trigger else str(event["type"])


class Hook:
    """A signed webhook endpoint: the first attempt of each delivery answers 500, the next 204."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.got: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                verified = signed(hook.secret, self.headers, body)
                delivery = self.headers.get("X-Holdpoint-Delivery")
                with hook.lock:
                    ok = verified and any(g["delivery"] == delivery for g in hook.got)
                    hook.got.append({"body": json.loads(body), "delivery": delivery, "ok": ok})
                self.send_response(204 if ok else 500)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def accepted(self, sid: str) -> list[dict[str, Any]]:
        with self.lock:
            return [g for g in self.got if g["ok"] and g["body"]["session_id"] == sid]

    def delivered(self, sid: str) -> set[str]:
        return {g["body"]["type"] for g in self.accepted(sid)}

    def outcome(self, sid: str) -> list[str]:
        """The events delivered, each accepted once (one delivery id, one 204)."""
        accepted = self.accepted(sid)
        twice = Counter(g["delivery"] for g in accepted)
        assert all(n == 1 for n in twice.values()), f"a webhook delivered twice: {twice}"
        return sorted(g["body"]["type"] for g in accepted)


@pytest.fixture
def hook(worker: Any) -> Iterator[Hook]:
    out = Hook(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    yield out
    out.server.shutdown()


ADDRESS = "bob@example.com"


def chaos_answer(sent: dict[str, Any]) -> Any:
    """The seed's worker, which also answers a `lookup` at once."""
    trigger = sent["trigger"]
    if trigger["type"] == "tool.execute" and trigger["name"] == "lookup":
        return {"actions": [{"type": "tool.result", "result": ADDRESS}]}
    return seed_worker.decide(trigger, sent.get("proposed"))


@pytest.fixture
def chaos_worker(worker: Any) -> Iterator[str]:
    server, _ = seed_worker.serve(0, os.environ["HOLDPOINT_E2E_WORKER_SECRET"], answer=chaos_answer)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def declare(api: ChaosApi, scenario: Scenario, worker_url: str, hook: Hook) -> None:
    agent = json.loads(json.dumps(scenario.agent).replace("{hook}", hook.url))
    declare_agent(api, worker_url, **agent)


def burst(rng: random.Random, service: str, operation: str) -> tuple[str, int]:
    """A refusal AWS gives this call, and how many attempts in a row it refuses: up to one more
    than the client's attempts, so some bursts are absorbed by botocore and some surface."""
    code = rng.choice(refusals_for(service, operation))
    attempts = clients.POLICIES.get(service, clients.POLICIES["dynamodb"]).attempts
    return code, rng.randint(1, attempts + 1)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_chaos_aws_refusals_at_every_call_site_lose_and_double_nothing(
        scenario: str, chaos_stack: Any, faults: Faults, chaos_worker: str, hook: Hook) -> None:
    plot = SCENARIOS[scenario]
    clean = Run(chaos_stack, hook)
    declare(clean.api, plot, chaos_worker, hook)
    faults.sites.clear()
    before = {row["session_id"] for row in sessions_of(clean.api)}
    baseline = outcome(clean, plot.run(clean), before)
    sites = sorted(site for site in faults.sites if site[0] is not None)
    assert sites, "the discovery pass saw no AWS call"
    rng = random.Random(f"{SEED}/{scenario}")
    plan = {}
    for function, service, operation in sites:
        code, count = burst(rng, service, operation)
        faults.inject(service, operation, code, function=function, first=count)
        plan[(function, service, operation)] = (code, count)
    faulted = Run(chaos_stack, hook)
    before = {row["session_id"] for row in sessions_of(faulted.api)}
    sid = plot.run(faulted)
    faults.stop()
    ended = outcome(faulted, sid, before)
    assert ended == baseline, f"the faulted run ended otherwise:\n{json.dumps(ended)}\nnot\n{json.dumps(baseline)}"
    assert not faulted.bad, faulted.bad
    assert not clean.bad, clean.bad
    fired = sum(faults.injected.values())
    assert fired, "no fault was injected"
    record_sites(scenario, faults.sites)
    statuses = sum((c.statuses for c in faulted.clients), Counter())
    print(f"\n{scenario}: {len(sites)} call sites, {fired} refusals injected, answers {dict(statuses)}")
    for site, (code, count) in sorted(plan.items(), key=str):
        print(f"  {site}: {code} x{count}")


def record_sites(scenario: str, sites: Counter[tuple[str | None, str, str]]) -> None:
    """Every call site a scenario reached (both passes: a refusal's fallback is reached only in the
    faulted one) must be described in tests/chaos/sites.py; with `HOLDPOINT_CHAOS_SITES` set (a
    JSON-lines file) they are written there, for docs/OPERATIONS.md's table."""
    reached = sorted((f, svc, op) for f, svc, op in sites if f is not None)
    undescribed = [site for site in reached if site not in REFUSED]
    assert not undescribed, f"call sites with no line in tests/chaos/sites.py (and docs/OPERATIONS.md): {undescribed}"
    path = os.environ.get("HOLDPOINT_CHAOS_SITES")
    if path:
        with open(path, "a") as out:
            for function, service, operation in sorted(site for site in sites if site[0] is not None):
                out.write(json.dumps({"scenario": scenario, "function": function, "service": service,
                                      "operation": operation}) + "\n")


async def connected(url: str, key: str) -> Follower:
    """A follower's connection, connecting again while the handshake is refused (the authorizer's
    read refused is a 500; the `$connect` route's, a 503), as a client does after `Retry-After`."""
    for _ in range(CLIENT_RETRIES):
        follower = Follower(url, key)
        try:
            return await follower.__aenter__()
        except InvalidStatus:
            await asyncio.sleep(0.2)
    raise AssertionError(f"the handshake was refused {CLIENT_RETRIES} times")


async def followed(run: Run, url: str) -> tuple[str, list[dict[str, Any]], Follower]:
    """The seed scenario with a live follower subscribed from its first event: what it handed over
    once the session is done, its gaps filled by subscribing again (the keep-alive) until it has
    the log's last event."""
    follower = await connected(url, run.stack.api_key)
    try:
        sid = await asyncio.to_thread(run.api.start)
        await follower.follow(sid, 0)
        [interrupt] = (await asyncio.to_thread(run.api.wait_status, sid, "interrupted"))["interrupts"]
        await asyncio.to_thread(resume, run.api, sid, interrupt["interrupt_id"], {"approved": True})
        await asyncio.to_thread(run.api.wait_status, sid, "done")
        last = (await asyncio.to_thread(run.api.ok, "GET", f"/v1/sessions/{sid}/events?limit=500"))["events"][-1]
        got: list[dict[str, Any]] = []
        while not got or got[-1]["seq"] < last["seq"]:
            try:
                got.append((await follower.next(timeout=2))[1])
            except TimeoutError:
                await follower.keepalive()  # a post lost at the log's end shows no gap: ask again
        return sid, got, follower
    finally:
        await follower.__aexit__(None, None, None)


@pytest.mark.timeout(150)
def test_chaos_a_live_follower_gets_every_event_once_and_in_order_through_aws_refusals(
        chaos_stack: Any, faults: Faults, chaos_worker: str, hook: Hook) -> None:
    """The seed scenario followed over the WebSocket API, once fault-free and once with a burst of
    AWS's refusals at every call site both reach (the live function's, and the posts of every
    committing function): the follower ends with the log, each event once and in order."""
    assert chaos_stack.live is not None
    clean = Run(chaos_stack, hook)
    declare(clean.api, Scenario(seed_scenario), chaos_worker, hook)
    faults.sites.clear()
    sid, got, _ = asyncio.run(followed(clean, chaos_stack.live.url))
    assert got == clean.api.ok("GET", f"/v1/sessions/{sid}/events?limit=500")["events"]
    # Its `$disconnect` (the followed session's slot, the caller's, the connection's item) is
    # over before the faults start, so their bursts fall on the faulted run's own calls.
    wait_for(lambda: faults.sites[("LiveFunction", "dynamodb", "DeleteItem")] >= 3, "the clean run's $disconnect", 30)
    sites = sorted(site for site in faults.sites if site[0] is not None)
    read = ("LiveFunction", "dynamodb", "GetItem")
    posts = [site for site in sites if site[1] == "apigatewaymanagementapi" and site[0] != "LiveFunction"]
    assert read in sites and posts, sites
    rng = random.Random(f"{SEED}/live")
    # Past the client's retries at two sites: a subscribe's read (its API key's check: an error
    # frame, then the client's subscribe again) and a commit's post to the follower (a lost post).
    surfaced = {read, posts[0]}
    for function, service, operation in sites:
        code, count = burst(rng, service, operation)
        if (function, service, operation) in surfaced:
            count = clients.POLICIES.get(service, clients.POLICIES["dynamodb"]).attempts + 1
        faults.inject(service, operation, code, function=function, first=count)
    faulted = Run(chaos_stack, hook)
    sid, got, follower = asyncio.run(followed(faulted, chaos_stack.live.url))
    faults.stop()
    assert got == faulted.api.ok("GET", f"/v1/sessions/{sid}/events?limit=500")["events"]
    assert not faulted.bad and not clean.bad, faulted.bad + clean.bad
    assert sum(faults.injected.values()), "no fault was injected"
    # The subscribe's read was refused past the client's retries (the posts may all come before
    # the follower subscribes again, and then none is refused: tests/e2e/test_live_e2e.py loses one).
    refused = sum(n for (f, svc, op, _), n in faults.injected.items() if (f, svc, op) == read)
    assert refused > clients.POLICIES["dynamodb"].attempts, faults.injected
    # (The error frame itself may be refused too: the keep-alive is then what subscribes again.)
    assert all(e["error"]["code"] in ("throttled", "unavailable") for e in follower.errors), follower.errors
    record_sites("live", faults.sites)
    print(f"\nlive: {len(sites)} call sites, {sum(faults.injected.values())} refusals injected, "
          f"{follower.gaps} gaps filled, {follower.duplicates} repeats dropped, {len(follower.errors)} error frames")


START = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": "Email Bob"}}


def post_start(api: ChaosApi, key: str) -> requests.Response:
    return api.http.post(api.base + "/v1/sessions", json=START, headers={"Idempotency-Key": key}, timeout=60)


def run_to_end(api: ChaosApi, sid: str) -> None:
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    assert api.resume(sid, interrupt["interrupt_id"], {"approved": True}).status_code == 200
    api.wait_status(sid, "done")
    assert [row["session_id"] for row in sessions_of(api)] == [sid]


@pytest.mark.timeout(120)
def test_chaos_kick_refused_past_its_attempts_is_a_timer_and_the_session_runs_without_a_resend(
        chaos_stack: Any, faults: Faults, worker: Any) -> None:
    """The kick after a new session's commit refused on every attempt: the API sets it as a
    one-time Scheduler timer instead and answers 202, and the session runs to its end although
    the client sends nothing again."""
    api = chaos_api(chaos_stack)
    declare_agent(api, worker[0])
    faults.inject("sqs", "SendMessage", "ThrottlingException", function="ApiFunction",
                  first=clients.POLICIES["sqs"].attempts)
    first = post_start(api, "kick-1")
    assert first.status_code == 202, first.text
    assert faults.sites[("ApiFunction", "scheduler", "CreateSchedule")] == 1
    run_to_end(api, first.json()["session_id"])
    record_sites("kick", faults.sites)


@pytest.mark.timeout(120)
def test_chaos_kick_and_its_timer_refused_is_a_503_and_the_keyed_resend_records_nothing_twice(
        chaos_stack: Any, faults: Faults, worker: Any) -> None:
    """The kick and the timer standing in for it both refused: a 503 with `Retry-After` for an
    input that was recorded. The resend with the same `Idempotency-Key` finds that session (no
    second one), kicks it, and it runs to its end."""
    api = chaos_api(chaos_stack)
    declare_agent(api, worker[0])
    faults.inject("sqs", "SendMessage", "ThrottlingException", function="ApiFunction",
                  first=clients.POLICIES["sqs"].attempts)
    faults.inject("scheduler", "CreateSchedule", "ThrottlingException", function="ApiFunction",
                  first=clients.POLICIES["scheduler"].attempts)
    first = post_start(api, "kick-2")
    assert first.status_code == 503 and first.headers.get("Retry-After"), first.text
    again = post_start(api, "kick-2")
    assert again.status_code == 202, again.text
    run_to_end(api, again.json()["session_id"])
    record_sites("kick", faults.sites)
