"""The agent loop end to end (PROTOCOL.md §2, §4): tools, deferred and client tools, the worker LLM,
sub-agents, budgets, queued turns, retried turn ids, decision retries on the Timer state machine,
operator interrupts (R5) and held follow-ons (R10) -- all over HTTP on the local stack.

Most tests use an in-process worker (`holdpoint.workers.register`): the local stack runs the engine
handler in this process, so the worker sees exactly what an HTTPS worker would. Tests 9 and 11 use
HTTP workers built on examples/seed_worker.py.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from holdpoint.aws.store import Store
from holdpoint.aws.timers import Timers
from holdpoint.outbound import workers
from holdpoint_local.stack import DEFAULT_TENANT
from holdpoint_sdk.worker import http_handler
from tests.harness import proposing
from tests.stack import SCRIPT, Api, resumed_triggers, seed_worker
from tests.waiting import wait_for, wait_quiet

Decide = Callable[[dict[str, Any]], dict[str, Any]]

TOOLS = [
    {"name": "send_email", "input": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}},
    {"name": "lookup", "input": {"type": "object"}},
]


# --- helpers -------------------------------------------------------------------------------------


class Log:
    """Every decision request an in-process worker saw (the worker runs on poller threads)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def append(self, req: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(req)

    def of(self, sid: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["session_id"] == sid]

    def triggers(self, sid: str, type_: str | None = None) -> list[dict[str, Any]]:
        return [r["trigger"] for r in self.of(sid) if type_ is None or r["trigger"]["type"] == type_]

    def kinds(self, sid: str) -> list[str]:
        return [t["type"] for t in self.triggers(sid)]


def declare(api: Api, decide: Decide | None, agent_id: str = "assistant", tenant: str = DEFAULT_TENANT,
            **config: Any) -> None:
    """PUT an agent, then give it the in-process worker `decide` (if any) in the table directly:
    the API refuses `worker.python`, which only code (here, the test) may set."""
    agent: dict[str, Any] = {"llm": {"provider": "scripted", "script": SCRIPT}, "tools": TOOLS, **config}
    stored = api.ok("PUT", f"/v1/agents/{agent_id}", agent)["agent"]
    if decide is not None:
        name = f"e2e-{uuid.uuid4().hex[:12]}"
        workers.register(name, decide)
        Store(os.environ["TABLE_NAME"]).put_agent(tenant, agent_id, {**stored, "worker": {"python": name}})


def start(api: Api, text: str, agent_id: str = "assistant", **extra: Any) -> dict[str, Any]:
    return api.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": agent_id,
                                            "message": {"role": "user", "content": text}, **extra})


def say(api: Api, sid: str, text: str, **extra: Any) -> Any:
    return api.req("POST", f"/v1/sessions/{sid}/inputs",
                   {"type": "client.message", "message": {"role": "user", "content": text}, **extra})


def events(api: Api, sid: str, type_: str | None = None) -> list[dict[str, Any]]:
    return [e for e in api.events(sid) if type_ is None or e["type"] == type_]


def open_tool_call(api: Api, sid: str, name: str = "send_email") -> dict[str, Any]:
    """Wait until the session has an open tool call named `name`; return it (from the view)."""
    def found() -> dict[str, Any] | None:
        calls = [c for c in api.view(sid)["calls"] if c["kind"] == "tool_call" and c.get("name") == name]
        return calls[0] if calls else None

    return wait_for(found, f"an open {name} call")


def delivered(api: Api, sid: str, trigger: str) -> list[dict[str, Any]]:
    return [e for e in events(api, sid, "decision.delivered") if e["data"].get("trigger") == trigger]


def operator(stack: Any) -> Api:
    key = f"hp_operator_{uuid.uuid4().hex[:12]}"
    put_api_key(stack.env["TABLE_NAME"], key, "dev", "ops", "operator")
    return Api(stack.base_url, key)


def http_worker(decide: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
                fail_first: int = 0) -> tuple[ThreadingHTTPServer, list[dict[str, Any]], dict[str, int]]:
    """The seed's HTTP worker (signature checked with the e2e secret), optionally answering HTTP 503
    to its first `fail_first` requests, optionally with another `decide(trigger, proposed)`."""
    secret = os.environ["HOLDPOINT_E2E_WORKER_SECRET"]
    hits = {"n": 0, "failed": 0}
    lock = threading.Lock()

    recording = seed_worker.worker(secret, lambda sent: (decide or seed_worker.decide)(sent["trigger"],
                                                                                       sent.get("proposed")))

    class Handler(http_handler(recording)):  # type: ignore[misc]
        def do_POST(self) -> None:  # noqa: N802
            with lock:
                hits["n"] += 1
                fail = hits["n"] <= fail_first
                if fail:
                    hits["failed"] += 1
            if fail:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_POST()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, recording.seen, hits


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def servers() -> Iterator[list[ThreadingHTTPServer]]:
    started: list[ThreadingHTTPServer] = []
    yield started
    for server in started:
        server.shutdown()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/"


# --- 1. two tools in one model reply ------------------------------------------------------------


def test_two_tool_turn_reprompts_exactly_once_after_both_results(api: Api, log: Log) -> None:
    script = [
        {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "lookup", "arguments": {"q": "bob"}},
                                                            {"name": "send_email", "arguments": {"to": "bob"}}]}},
        {"when": {"role": "tool"}, "reply": {"content": "Both done."}},
    ]
    declare(api, proposing(log, tool_execute=lambda r: {"actions": [
        {"type": "tool.result", "result": f"ok {r['trigger']['name']}"}]}),
        llm={"provider": "scripted", "script": script})
    sid = start(api, "do two things")["session_id"]
    view = api.wait_status(sid, "done")
    kinds = log.kinds(sid)
    assert kinds.count("tool.execute") == 2 and kinds.count("tool.finished") == 2
    assert sorted(t["name"] for t in log.triggers(sid, "tool.execute")) == ["lookup", "send_email"]
    # Exactly one re-prompt, proposed only once both results are in.
    assert [r["proposed"]["actions"] for r in log.of(sid) if r["trigger"]["type"] == "tool.finished"] == \
        [[], [{"type": "llm.call"}]]
    assert kinds.count("llm.finished") == 2
    assert len([e for e in events(api, sid, "call.started") if e["data"]["kind"] == "llm_call"]) == 2
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert sorted(m["content"] for m in view["messages"][2:4]) == ["ok lookup", "ok send_email"]
    assert view["messages"][-1]["content"] == "Both done."
    assert view["last_turn"]["status"] == "done"


# --- 2. a deferred tool settled later ------------------------------------------------------------


def test_deferred_tool_settled_later_through_the_settle_route(api: Api, log: Log) -> None:
    declare(api, proposing(log, tool_execute={}))
    sid = start(api, "Email Bob")["session_id"]
    call = open_tool_call(api, sid)
    wait_for(lambda: delivered(api, sid, "tool.execute"), "the tool.execute answered {}")
    view = api.view(sid)
    assert view["status"] == "running" and view["interrupts"] == []
    [still] = [c for c in view["calls"] if c["id"] == call["id"]]
    assert still["status"] == "open" and still["attempt"] == 1 and "deadline" in still
    stale = api.req("POST", f"/v1/sessions/{sid}/calls/settle",
                    {"type": "tool.result", "id": call["id"], "attempt": 2, "result": "late"})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "call_not_open"
    assert api.view(sid)["status"] == "running"
    out = api.req("POST", f"/v1/sessions/{sid}/calls/settle",
                  {"type": "tool.result", "id": call["id"], "attempt": 1, "result": "sent"})
    assert out.status_code == 200 and out.json() == {"ok": True, "id": call["id"]}
    view = api.wait_status(sid, "done")
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert view["messages"][2]["content"] == "sent" and view["messages"][-1]["content"] == "Email sent."
    [finished] = log.triggers(sid, "tool.finished")
    assert finished["ok"] is True and finished["result"] == "sent" and finished["id"] == call["id"]
    again = api.req("POST", f"/v1/sessions/{sid}/calls/settle",
                    {"type": "tool.result", "id": call["id"], "result": "twice"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "call_not_open"


# --- 3. a client tool ----------------------------------------------------------------------------


def test_client_tool_is_settled_by_a_client_tool_result_input(api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log), tools=[{"name": "send_email", "handler": "client"}])
    sid = start(api, "Email Bob")["session_id"]
    call = open_tool_call(api, sid)
    assert call["handler"] == "client" and "deadline" not in call
    wait_quiet(stack)  # a wrongly dispatched tool.execute would have reached the worker by now
    assert log.triggers(sid, "tool.execute") == []
    assert api.view(sid)["status"] == "running"
    out = api.req("POST", f"/v1/sessions/{sid}/inputs", {"type": "tool.result", "id": call["id"], "result": "sent"})
    assert out.status_code == 200, out.text
    view = api.wait_status(sid, "done")
    assert view["messages"][-1]["content"] == "Email sent."
    assert log.triggers(sid, "tool.execute") == []
    [finished] = log.triggers(sid, "tool.finished")
    assert finished["id"] == call["id"] and finished["result"] == "sent"


# --- 4. the worker's own LLM -------------------------------------------------------------------------


def test_worker_llm_path_llm_execute_answered_with_llm_result(api: Api, log: Log) -> None:
    def execute(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "llm.result", "message": {"role": "assistant", "content": "from my model"},
                             "usage": {"prompt_tokens": 3, "completion_tokens": 4}, "cost": 0.01}]}

    declare(api, proposing(log, llm_execute=execute), llm={"provider": "worker"})
    sid = start(api, "say hi")["session_id"]
    view = api.wait_status(sid, "done")
    [exe] = log.triggers(sid, "llm.execute")
    assert set(exe) >= {"id", "request", "stream", "attempt"} and exe["attempt"] == 1
    [finished] = log.triggers(sid, "llm.finished")
    assert finished["ok"] is True and finished["id"] == exe["id"]
    assert finished["message"]["content"] == "from my model"
    assert [m["role"] for m in view["messages"]] == ["user", "assistant"]
    assert view["messages"][-1]["content"] == "from my model"
    assert view["usage"]["cost"] == pytest.approx(0.01)
    assert view["usage"]["prompt_tokens"] == 3 and view["usage"]["completion_tokens"] == 4


# --- 5. a sub-agent runs while the parent is parked ----------------------------------------------------


def test_sub_agent_runs_to_done_while_parent_parked_and_its_result_is_held(api: Api, stack: Any, log: Log) -> None:
    parent_script = [
        {"when": {"role": "user", "contains": "research"}, "reply": {"tool_calls": [
            {"name": "researcher", "arguments": {"task": "find Bob's address"}},
            {"name": "send_email", "arguments": {"to": "bob"}}]}},
        {"when": {"role": "tool"}, "reply": {"content": "all done"}},
    ]
    child_script = [{"when": {"role": "user"}, "reply": {"content": "bob@example.com"}}]
    parked = threading.Event()

    def execute(req: dict[str, Any]) -> dict[str, Any]:
        if req["trigger"]["name"] == "send_email":
            parked.set()
            return {"actions": [{"type": "interrupt", "reason": "confirm"}]}
        return req["proposed"]

    def child_messages(req: dict[str, Any]) -> dict[str, Any]:
        if req["ancestry"]:  # the child's turn starts only once the parent has asked to park
            assert parked.wait(30)
        return req["proposed"]

    def resumed(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "tool.result", "result": "sent"}]}

    decide = proposing(log, tool_execute=execute, client_messages=child_messages, interrupt_resumed=resumed)
    declare(api, decide, agent_id="researcher", llm={"provider": "scripted", "script": child_script})
    declare(api, decide, llm={"provider": "scripted", "script": parent_script},
            sub_agents=[{"name": "researcher", "agent_id": "researcher"}])
    sid = start(api, "research and email")["session_id"]
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    [spawned] = [e for e in events(api, sid, "call.started") if e["data"]["kind"] == "sub_agent"]
    child_id = spawned["data"]["session_id"]
    call_id = spawned["data"]["call_id"]
    child = api.wait_status(child_id, "done")
    assert child["messages"][-1]["content"] == "bob@example.com"
    assert [r["ancestry"] for r in log.of(child_id)] == [[sid]] * len(log.of(child_id))
    # The child's result settled the parent's call while parked; its follow-on is held (R10).
    wait_for(lambda: [e for e in events(api, sid, "call.settled") if e["data"]["call_id"] == call_id],
             "the parent's sub_agent call settled")
    parent = api.view(sid)
    assert parent["status"] == "interrupted"
    assert call_id not in [c["id"] for c in parent["calls"]]
    [result] = [n["message"] for n in parent["message_tree"]["nodes"] if n["message"].get("tool_call_id") == call_id]
    assert result["role"] == "tool" and result["content"] == "bob@example.com"
    wait_quiet(stack)  # a wrongly released follow-on would have been delivered by now
    assert log.triggers(sid, "sub_agent.finished") == []
    out = api.resume(sid, interrupt["interrupt_id"], {"approved": True})
    assert out.status_code == 200 and out.json()["noop"] is False
    view = api.wait_status(sid, "done")
    kinds = log.kinds(sid)
    assert kinds.index("interrupt.resumed") < kinds.index("sub_agent.finished")
    [finished] = log.triggers(sid, "sub_agent.finished")
    assert finished == {"type": "sub_agent.finished", "id": call_id, "ok": True, "session_id": child_id,
                        "agent_id": "researcher", "result": "bob@example.com"}
    # Exactly one re-prompt once both siblings (sub-agent and send_email) are settled.
    assert [(r["trigger"]["type"], r["proposed"]["actions"]) for r in log.of(sid)
            if r["trigger"]["type"] in ("sub_agent.finished", "tool.finished")] == \
        [("sub_agent.finished", []), ("tool.finished", [{"type": "llm.call"}])]
    assert len([e for e in events(api, sid, "call.started") if e["data"]["kind"] == "llm_call"]) == 2
    assert view["messages"][-1]["content"] == "all done"
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]


def test_stalled_sub_agent_times_out_on_the_durable_timer_and_the_parent_finishes(api: Api, log: Log) -> None:
    parent_script = [
        {"when": {"role": "user", "contains": "research"}, "reply": {"tool_calls": [
            {"name": "researcher", "arguments": {"task": "look Bob up"}}]}},
        {"when": {"role": "tool"}, "reply": {"content": "gave up on the research"}},
    ]
    child_script = [{"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "lookup", "arguments": {}}]}}]
    decide = proposing(log, tool_execute={})  # the child's lookup is deferred and never settled
    declare(api, decide, agent_id="researcher", llm={"provider": "scripted", "script": child_script},
            tools=[{"name": "lookup", "input": {"type": "object"}}])
    declare(api, decide, llm={"provider": "scripted", "script": parent_script},
            sub_agents=[{"name": "researcher", "agent_id": "researcher"}],
            retry={"sub_agent": {"attempt_timeout_secs": 1, "max_attempts": 1}})
    sid = start(api, "research Bob")["session_id"]
    view = api.wait_status(sid, "done", timeout=90)  # Timer executions (Wait, then SQS) fire the checks
    assert view["messages"][-1]["content"] == "gave up on the research"
    [finished] = log.triggers(sid, "sub_agent.finished")
    assert finished["ok"] is False and finished["error_value"]["code"] == "deadline_exceeded"
    reasons = [e["data"]["reason"] for e in events(api, sid, "call.deadline_extended")]
    assert reasons == ["making progress"]  # the first check saw the child move; the second saw it stuck
    child = api.view(finished["session_id"])
    assert child["status"] == "running" and child["calls"][0]["name"] == "lookup"


# --- 6. a budget stop and its resume ----------------------------------------------------------------


def test_r4_budget_stop_is_a_global_system_interrupt_only_an_operator_resumes(api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log), budget={"max_cost": 0.001},
            llm={"provider": "scripted", "price_in": 1.0, "price_out": 1.0,
                 "script": [{"reply": {"content": "spent"}}]})
    sid = start(api, "say something long enough to cost")["session_id"]
    view = api.wait_status(sid, "interrupted")
    [stop] = view["interrupts"]
    assert stop["origin"] == "system" and stop["reason"] == "budget_exceeded"
    assert stop.get("anchor") is None
    assert stop["payload"]["spent"] >= 0.001 and stop["payload"]["budget"] == pytest.approx(0.001)
    assert view["usage"]["cost"] >= 0.001
    [raised] = events(api, sid, "session.interrupted")
    assert raised["data"]["origin"] == "system" and "anchor" not in raised["data"]
    refused = api.resume(sid, stop["interrupt_id"], {"budget": 1.0})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert api.view(sid)["status"] == "interrupted"
    ops = operator(stack)
    out = ops.resume(sid, stop["interrupt_id"], {"budget": 1.0})
    assert out.status_code == 200 and out.json()["noop"] is False
    view = api.wait_status(sid, "done")
    assert view["interrupts"] == [] and view["messages"][-1]["content"] == "spent"
    [cleared] = events(api, sid, "session.interrupt_resumed")
    assert cleared["data"]["responder"] == {"subject": "ops", "origin": "operator"}
    [budget] = events(api, sid, "budget.raised")
    assert budget["data"]["budget"] == 1.0
    assert log.kinds(sid).index("interrupt.resumed") < log.kinds(sid).index("llm.finished")


# --- 7. a queued message -------------------------------------------------------------------------------


def test_second_message_gets_turn_already_active_or_queues_with_queue_true(api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log, tool_execute={}))  # a deferred tool keeps the first turn running
    first = start(api, "Email Bob")
    sid = first["session_id"]
    call = open_tool_call(api, sid)
    refused = say(api, sid, "say hi")
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "turn_already_active" and error["turn_id"] == first["turn_id"]
    queued = say(api, sid, "say hi", queue=True)
    assert queued.status_code == 202, queued.text
    body = queued.json()
    assert body["queued"] is True and body["session_id"] == sid and body["turn_id"] != first["turn_id"]
    refused_again = say(api, sid, "say hi twice")
    assert refused_again.status_code == 409
    assert refused_again.json()["error"]["code"] == "turn_already_active"
    wait_quiet(stack)  # a queued turn started too early would have run by now
    assert [m["content"] for m in api.view(sid)["messages"] if m["role"] == "user"] == ["Email Bob"]
    assert api.ok("POST", f"/v1/sessions/{sid}/calls/settle",
                  {"type": "tool.result", "id": call["id"], "result": "sent"})["ok"] is True
    view = api.wait(sid, lambda v: v["status"] == "done" and v["last_turn"]["turn_id"] == body["turn_id"])
    assert [m.get("content") for m in view["messages"]] == ["Email Bob", None, "sent", "Email sent.", "say hi", "Hi!"]
    turns = [(e["type"], e["data"]["turn_id"]) for e in api.events(sid)
             if e["type"] in ("turn.started", "turn.finished", "turn.queued")]
    assert turns == [("turn.started", first["turn_id"]), ("turn.queued", body["turn_id"]),
                     ("turn.finished", first["turn_id"]), ("turn.started", body["turn_id"]),
                     ("turn.finished", body["turn_id"])]
    assert len(log.triggers(sid, "client.messages")) == 2


# --- 8. a retried turn_id ----------------------------------------------------------------------------


def test_retried_turn_id_returns_the_same_turn_and_runs_it_once(api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log))
    first = start(api, "say hi", turn_id="turn-retry-1")
    sid = first["session_id"]
    assert first["turn_id"] == "turn-retry-1"
    again = say(api, sid, "say hi", turn_id="turn-retry-1")  # a client retry, likely mid-turn
    assert again.status_code == 202, again.text
    assert again.json() == {"session_id": sid, "turn_id": "turn-retry-1", "queued": False}
    api.wait_status(sid, "done")
    late = say(api, sid, "say hi", turn_id="turn-retry-1")  # and one after the turn ended
    assert late.status_code == 202 and late.json()["turn_id"] == "turn-retry-1"
    wait_quiet(stack)
    view = api.wait_status(sid, "done")
    assert [m["content"] for m in view["messages"]] == ["say hi", "Hi!"]
    assert len(log.triggers(sid, "client.messages")) == 1
    assert len(events(api, sid, "turn.started")) == 1


# --- 9. decision retries on the Timer state machine --------------------------------------------------------


def test_worker_503_twice_is_retried_with_durable_backoff_then_finishes(api: Api, stack: Any,
                                                                       servers: list[ThreadingHTTPServer]) -> None:
    server, seen, hits = http_worker(fail_first=2)
    servers.append(server)
    api.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": SCRIPT}, "tools": TOOLS,
                                           "worker": {"url": url(server),
                                                      "secret": "env:HOLDPOINT_E2E_WORKER_SECRET"}})
    sid = start(api, "say hi")["session_id"]
    view = api.wait_status(sid, "done", timeout=90)
    assert view["messages"][-1]["content"] == "Hi!"
    assert hits["failed"] == 2
    retries = events(api, sid, "decision.retry")
    assert [(e["data"]["attempt"], e["data"]["delay_secs"]) for e in retries] == [(1, 2.0), (2, 4.0)]
    assert all("503" in e["data"]["error"] for e in retries)
    assert len({e["data"]["decision_id"] for e in retries}) == 1
    assert [r["trigger"]["type"] for r in seen][:2] == ["session.start", "client.messages"]
    assert seen[0]["attempts"] == 3
    # The backoffs were durable timers: one-time schedules, each fired once by the local stack's
    # scheduler (as EventBridge Scheduler would) and deleted after (ActionAfterCompletion DELETE).
    fired = sorted(t.seconds for t in stack.timers.fired if t.message["session_id"] == sid)
    assert fired == [2, 4]
    assert not [t for t in Timers(client=stack.client("scheduler")).pending() if t.message["session_id"] == sid]


# --- 10. R5: operator and client interrupts through the API --------------------------------------------------


def test_r5_operator_interrupt_at_head_and_global_over_http(api: Api, stack: Any, log: Log) -> None:
    declare(api, proposing(log))
    sid = start(api, "say hi")["session_id"]
    done = api.wait_status(sid, "done")
    ops = operator(stack)
    raised = ops.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "payload": {"why": "audit"}})
    assert raised["noop"] is False and raised["interrupt"]["origin"] == "operator"
    iid = raised["interrupt_id"]
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    assert interrupt["interrupt_id"] == iid and interrupt["origin"] == "operator" and interrupt["reason"] == "review"
    assert interrupt["anchor"] == done["head_id"] and interrupt["payload"] == {"why": "audit"}
    [event] = events(api, sid, "session.interrupted")
    assert event["data"]["origin"] == "operator" and event["data"]["anchor"] == done["head_id"]
    parked = say(api, sid, "say hi")
    assert parked.status_code == 409 and parked.json()["error"]["code"] == "interrupted"
    forbidden = api.resume(sid, iid, {"ok": True})
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "forbidden"
    assert api.view(sid)["status"] == "interrupted"
    out = ops.resume(sid, iid, {"ok": True})
    assert out.status_code == 200 and out.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    api.wait(sid, lambda v: v["status"] == "done" and not v["interrupts"])
    wait_for(lambda: log.triggers(sid, "interrupt.resumed"), "interrupt.resumed delivered")
    assert [t["payload"] for t in log.triggers(sid, "interrupt.resumed")] == [{"ok": True}]
    [cleared] = events(api, sid, "session.interrupt_resumed")
    assert cleared["data"]["responder"] == {"subject": "ops", "origin": "operator"}

    # Global: no anchor, every branch parked, a new message refused.
    raised = ops.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "freeze", "global": True})
    gid = raised["interrupt_id"]
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    assert interrupt["interrupt_id"] == gid and interrupt["origin"] == "operator"
    assert interrupt.get("anchor") is None
    refused = say(api, sid, "say hi again")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "interrupted" and refused.json()["error"]["interrupt_ids"] == [gid]
    branch = api.req("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.messages",
                                                            "messages": [{"role": "user", "content": "say hi"}]})
    assert branch.status_code == 409 and branch.json()["error"]["code"] == "interrupted"
    assert api.resume(sid, gid, None).status_code == 403
    assert ops.resume(sid, gid, None).json()["noop"] is False
    api.wait(sid, lambda v: v["status"] == "done" and not v["interrupts"])
    accepted = say(api, sid, "say hi again")
    assert accepted.status_code == 202, accepted.text
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Hi!"


def test_r5_client_raised_interrupt_records_origin_client_and_the_client_may_resume(api: Api, log: Log) -> None:
    declare(api, proposing(log))
    sid = start(api, "say hi")["session_id"]
    head = api.wait_status(sid, "done")["head_id"]
    raised = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "hold on"})
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    assert interrupt["origin"] == "client" and interrupt["anchor"] == head
    assert api.resume(sid, raised["interrupt_id"], {"go": True}).json()["noop"] is False
    api.wait(sid, lambda v: v["status"] == "done" and not v["interrupts"])


# --- 11. R10: a result recorded while parked, its follow-on held ----------------------------------------------


@pytest.mark.parametrize("order", [["send_email", "lookup"], ["lookup", "send_email"]],
                         ids=["email_first", "lookup_first"])
def test_r10_lookup_result_recorded_while_parked_and_its_tool_finished_waits_for_the_resume(
        api: Api, stack: Any, monkeypatch: pytest.MonkeyPatch, worker: Any, order: list[str]) -> None:
    _, seen = worker
    original = seed_worker.decide

    def decide(trigger: dict[str, Any], proposed: dict[str, Any],
               calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        if trigger["type"] == "tool.execute" and trigger["name"] == "lookup":
            return {"actions": [{"type": "tool.result", "result": "bob@example.com"}]}
        return original(trigger, proposed, calls)

    monkeypatch.setattr(seed_worker, "decide", decide)
    script = [
        {"when": {"role": "user"}, "reply": {"tool_calls": [
            {"name": name, "arguments": {"to": "bob"} if name == "send_email" else {"q": "bob"}} for name in order]}},
        {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Email sent."}},
        {"when": {"role": "tool"}, "reply": {"content": "I did not send it."}},
    ]
    api.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": script}, "tools": TOOLS,
                                           "worker": {"url": worker[0], "secret": "env:HOLDPOINT_E2E_WORKER_SECRET"}})
    sid = api.start("Email Bob")

    def mine(kind: str) -> list[dict[str, Any]]:
        return [r["trigger"] for r in seen if r["session_id"] == sid and r["trigger"]["type"] == kind]

    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    lookup_id = [c for c in view["message_tree"]["nodes"] if c["message"].get("tool_calls")][0]["message"][
        "tool_calls"][order.index("lookup")]["id"]

    def lookup_recorded() -> list[dict[str, Any]]:
        nodes = api.view(sid)["message_tree"]["nodes"]
        return [n for n in nodes if n["message"].get("tool_call_id") == lookup_id]

    [node] = wait_for(lookup_recorded, "lookup's result in the tree")
    assert node["message"]["content"] == "bob@example.com"
    settled = [e for e in events(api, sid, "call.settled") if e["data"]["call_id"] == lookup_id]
    [raised] = events(api, sid, "session.interrupted")
    if order[0] == "send_email":
        assert settled[0]["seq"] > raised["seq"]  # recorded while parked
    wait_quiet(stack)  # a wrongly released follow-on would have been delivered by now
    assert api.view(sid)["status"] == "interrupted"
    assert mine("tool.finished") == []  # held (R10)
    out = api.resume(sid, interrupt["interrupt_id"], {"approved": True})
    assert out.status_code == 200 and out.json()["noop"] is False
    view = api.wait_status(sid, "done")
    kinds = [r["trigger"]["type"] for r in seen if r["session_id"] == sid]
    [resumed] = resumed_triggers(seen, sid)
    assert resumed["payload"] == {"approved": True}
    finished = mine("tool.finished")
    assert [f["id"] == lookup_id for f in finished].count(True) == 1
    assert kinds.index("interrupt.resumed") < kinds.index("tool.finished")
    # In arrival order: lookup's result (recorded first) before send_email's.
    assert finished[0]["id"] == lookup_id and finished[0]["result"] == "bob@example.com"
    assert finished[1]["name"] == "send_email" and finished[1]["result"] == "sent"
    assert view["messages"][-1]["content"] == "Email sent."
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]


# --- extra: a fractional backoff on the Timer state machine ---------------------------------------------------


def test_fractional_decision_backoff_still_wakes_the_decision(api: Api, servers: list[ThreadingHTTPServer]) -> None:
    """`backoff_base_secs: 1.45` makes the first delay 1.45 s; the timer must not fire before it is due."""
    server, seen, hits = http_worker(fail_first=1)
    servers.append(server)
    api.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": SCRIPT}, "tools": TOOLS,
                                           "retry": {"decision": {"backoff_base_secs": 1.45}},
                                           "worker": {"url": url(server),
                                                      "secret": "env:HOLDPOINT_E2E_WORKER_SECRET"}})
    sid = start(api, "say hi")["session_id"]
    wait_for(lambda: events(api, sid, "decision.retry"), "the first retry")
    [retry] = events(api, sid, "decision.retry")
    assert retry["data"]["delay_secs"] == pytest.approx(1.45)
    view = api.wait_status(sid, "done", timeout=20)
    assert view["messages"][-1]["content"] == "Hi!" and hits["failed"] == 1
