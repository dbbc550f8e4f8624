"""The agent loop around the interrupts (PROTOCOL.md §2, §4): turns, tools, retries, sub-agents, budgets."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.queue import from_queue as work_message
from holdpoint.core import subagents
from holdpoint.core.bound_action import canonical
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.client import ClientActionInput, ClientMessageInput, SettleBody
from holdpoint.outbound import workers
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.settle import settle
from tests.harness import Harness, proposing

pytestmark = pytest.mark.usefixtures("memory")


def later(h: Harness, seconds: float) -> None:
    """Let durable timers fire: move the engine's clock on and run what became due."""
    base = h.runner.clock()
    h.runner.clock = lambda: base + seconds
    h.settle()


def test_agent_with_no_worker_runs_on_the_engines_own_proposals() -> None:
    h = Harness(agent={"worker": None, "tools": []})
    h.say("say hi")
    view = h.view()
    assert view["status"] == "done" and view["messages"][-1]["content"] == "Hi!"


def test_decision_request_carries_the_protocol_fields() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(proposing(log))
    h.say("say hi")
    first = log[0]
    assert first["trigger"] == {"type": "session.start"}
    assert set(first["proposed"]) == {"messages", "actions", "agent"}  # agent: Holdpoint's extra
    assert first["proposed"]["actions"] == []
    assert set(first) >= {"session_id", "decision_id", "agent_id", "identity", "trigger", "proposed", "state",
                          "agent", "calls", "pending_calls", "messages", "message_tree", "ancestry", "attempts",
                          "deadline", "turn_id"}
    client = log[1]["trigger"]
    assert client["type"] == "client.messages" and client["new_from"] == 0
    assert log[1]["proposed"]["actions"] == [{"type": "llm.call"}]
    assert log[1]["proposed"]["messages"] == log[1]["messages"]  # echoing it appends nothing


def test_worker_state_and_agent_writes_persist_and_come_back() -> None:
    log: list[dict[str, Any]] = []

    def start(req: dict[str, Any]) -> dict[str, Any]:
        return {"agent": {**req["proposed"]["agent"], "system": "be terse"}, "state": {"n": 1}}

    h = Harness(proposing(log, session_start=start))
    h.say("say hi")
    assert all(r["state"] == {"n": 1} for r in log[1:])
    assert all(r["agent"]["system"] == "be terse" for r in log[1:])


def test_the_config_a_worker_gets_is_the_json_declared_byte_for_byte() -> None:
    """The config in force is typed inside, yet the worker protocol's bytes do not change: the
    request's `agent` and `proposed.agent` are the JSON as stored (integers where the model has
    floats, fields the model does not know, no defaults filled in), and so is the config a
    worker put in force."""
    log: list[dict[str, Any]] = []
    declared = {"budget": {"max_cost": 5}, "retry": {"decision": {"max_attempts": 3}}, "house": {"x": [1]}}

    def start(req: dict[str, Any]) -> dict[str, Any]:
        return {"agent": {**req["proposed"]["agent"], "system": "be terse", "interrupt_expires_in": 60}}

    h = Harness(proposing(log, session_start=start), agent=declared)
    h.say("say hi")
    stored = {**h.store.get_agent("t1", "assistant")}
    assert canonical(log[0]["agent"]) == canonical(log[0]["proposed"]["agent"]) == canonical(stored)
    assert canonical(log[1]["agent"]) == canonical({**stored, "system": "be terse", "interrupt_expires_in": 60})


def test_turn_already_active_409_names_the_turn_and_queue_true_runs_it_next() -> None:
    log: list[dict[str, Any]] = []
    hold = {"actions": []}  # leave the llm.finished unanswered: the turn stays running
    h = Harness(proposing(log, llm_finished=lambda r: hold if len(log) < 4 else r["proposed"]))
    first = h.say("say hi")
    assert h.view()["status"] == "running"
    with pytest.raises(Refusal) as refused:
        h.say("say hi again")
    assert refused.value.code == "turn_already_active" and refused.value.extra["turn_id"] == first.turn_id
    queued = sessions.submit(h.store, h.queue, h.caller, h.session_id, ClientMessageInput.model_validate(
        {"type": "client.message", "queue": True, "message": {"role": "user", "content": "say hi, queued"}}))
    assert queued.queued is True
    # End the first turn; the queued one starts in order.
    h.runner.transact("t1", h.session_id or "", lambda s: __import__("holdpoint.core.turns").core.turns.finish_turn(
        s, first.turn_id, ok=True))
    h.settle()
    state = h.state()
    assert state.turns[queued.turn_id or ""].status == "done"
    assert h.view()["messages"][-2]["content"] == "say hi, queued"


def test_known_turn_id_returns_that_turn_and_never_runs_it_twice() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(proposing(log))
    inp = {"type": "client.message", "agent_id": "assistant", "turn_id": "turn-1",
           "message": {"role": "user", "content": "say hi"}}
    first = sessions.submit(h.store, h.queue, h.caller, None, ClientMessageInput.model_validate(inp))
    h.session_id = first.session_id
    h.settle()
    again = sessions.submit(h.store, h.queue, h.caller, h.session_id, ClientMessageInput.model_validate(inp))
    h.settle()
    assert again.turn_id == "turn-1" and again.known
    assert len([r for r in log if r["trigger"]["type"] == "client.messages"]) == 1


def test_client_action_reaches_the_worker_as_a_trigger() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(proposing(log))
    h.say("say hi")
    sessions.submit(h.store, h.queue, h.caller, h.session_id, ClientActionInput.model_validate(
        {"type": "client.action", "name": "thumbs_up", "args": {"message": "nice"}}))
    h.settle()
    [action] = [r for r in log if r["trigger"]["type"] == "client.action"]
    assert action["trigger"] == {"type": "client.action", "name": "thumbs_up", "args": {"message": "nice"}}
    assert h.view()["status"] == "done"


def test_worker_failing_twice_then_answering_is_retried_with_backoff() -> None:
    calls = {"n": 0}

    def flaky(req: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise workers.WorkerUnavailable("HTTP 503")
        return req["proposed"]

    h = Harness(flaky)
    h.say("say hi")
    assert calls["n"] == 1 and h.view()["status"] == "running"
    retries = h.events("decision.retry")
    assert retries[0]["data"]["delay_secs"] == 2.0
    # Issue 32: the view says why a running session is not moving, not a silent `running`.
    waiting = h.view()["retrying"]
    assert (waiting["attempt"], waiting["reason"], waiting["decision_id"]) == (
        1, "HTTP 503", retries[0]["data"]["decision_id"]) and waiting["next_at"]
    later(h, 3)
    later(h, 10)
    assert h.view()["status"] == "done" and h.view()["retrying"] is None
    assert [e["data"]["attempt"] for e in h.events("decision.retry")] == [1, 2]


def test_worker_that_never_answers_fails_the_decision_after_its_attempts() -> None:
    def down(req: dict[str, Any]) -> dict[str, Any]:
        raise workers.WorkerUnavailable("timed out")

    h = Harness(down, agent={"retry": {"decision": {"max_attempts": 3, "backoff_base_secs": 1}}})
    h.say("say hi")
    for step in range(1, 5):
        later(h, 10 * step)
    failed = h.events("decision.failed")[0]
    assert "3 attempt" in failed["data"]["error"]["message"]


def test_protocol_breaking_response_fails_naming_the_field() -> None:
    h = Harness(lambda req: {"actions": [{"type": "teleport"}]})
    h.say("say hi")
    failed = h.events("decision.failed")[0]
    assert failed["data"]["error"]["param"] == "actions[0].type"
    assert h.state().turns[h.state().header.last_turn or ""].status == "failed"


def test_two_tool_turn_reprompts_once_after_both_settle() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(proposing(log, tool_execute=lambda r: {"actions": [{"type": "tool.result",
                                                                      "result": f"ok {r['trigger']['name']}"}]}))
    h.say("do two things")
    kinds = [r["trigger"]["type"] for r in log]
    assert kinds.count("tool.execute") == 2 and kinds.count("tool.finished") == 2
    proposals = [r["proposed"] for r in log if r["trigger"]["type"] == "tool.finished"]
    assert [p["actions"] for p in proposals] == [[], [{"type": "llm.call"}]]
    assert kinds.count("llm.finished") == 2


def test_undeclared_tool_or_bad_arguments_get_a_ready_tool_error_proposal() -> None:
    log: list[dict[str, Any]] = []

    def finished(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "tool.call", "name": "nope", "arguments": "{}"},
                            {"type": "tool.call", "name": "send_email", "arguments": "{not json"},
                            {"type": "tool.call", "name": "send_email", "arguments": {"to": 5}}]}

    h = Harness(proposing(log, llm_finished=lambda r: finished(r) if len(log) < 5 else r["proposed"]))
    h.say("say hi")
    executes = [r for r in log if r["trigger"]["type"] == "tool.execute"]
    assert [r["trigger"]["input"]["status"] for r in executes] == ["invalid", "malformed", "invalid"]
    assert all(r["proposed"]["actions"][0]["type"] == "tool.error" for r in executes)


def test_deferred_tool_settled_later_through_the_settle_route_with_attempts() -> None:
    log: list[dict[str, Any]] = []
    h = Harness(proposing(log, tool_execute={}))
    h.say("Email Bob")
    call_id = [c for c in h.state().calls.values() if c.kind == "tool_call"][0].id
    assert h.view()["status"] == "running"
    with pytest.raises(Refusal) as stale:
        settle(h.store, h.queue, h.caller, h.session_id or "", SettleBody(type="tool.result", id=call_id, attempt=2,
                                                                          result="late"))
    assert stale.value.code == "call_not_open"
    settle(h.store, h.queue, h.caller, h.session_id or "", SettleBody(type="tool.result", id=call_id, result="sent"))
    h.settle()
    assert h.view()["messages"][-1]["content"] == "Email sent."


def test_deferred_tool_past_its_deadline_fails_deadline_exceeded() -> None:
    h = Harness(proposing([], tool_execute={}))
    h.say("Email Bob")
    call = [c for c in h.state().calls.values() if c.kind == "tool_call"][0]
    h.runner.clock = lambda: (call.deadline_at or 0) + 5
    h.runner.handle(work_message({"kind": "deadline", "tenant": "t1", "session_id": h.session_id, "call_id": call.id,
                     "attempt": 1}))
    call = h.state().calls[call.id]
    assert call.status == "settled" and call.error["code"] == "deadline_exceeded"


def test_r12_parked_call_does_not_time_out() -> None:
    h = Harness()
    h.say("Email Bob")
    call = [c for c in h.state().calls.values() if c.kind == "tool_call"][0]
    h.runner.clock = lambda: 10**10
    h.runner.handle(work_message({"kind": "deadline", "tenant": "t1", "session_id": h.session_id, "call_id": call.id,
                     "attempt": 1}))
    assert h.state().calls[call.id].status == "open"


def test_output_schema_violation_settles_as_a_terminal_error() -> None:
    log: list[dict[str, Any]] = []
    tools = [{"name": "send_email", "output": {"type": "object", "required": ["id"]}}]
    h = Harness(proposing(log, tool_execute={"actions": [{"type": "tool.result", "result": "sent"}]}),
                agent={"tools": tools})
    h.say("Email Bob")
    [finished] = [r["trigger"] for r in log if r["trigger"]["type"] == "tool.finished"]
    assert finished["ok"] is False and finished["error_value"]["code"] == "output_invalid"


def test_client_tool_waits_for_a_client_tool_result() -> None:
    log: list[dict[str, Any]] = []
    tools = [{"name": "send_email", "handler": "client"}]
    h = Harness(proposing(log), agent={"tools": tools})
    h.say("Email Bob")
    assert not [r for r in log if r["trigger"]["type"] == "tool.execute"]
    call = [c for c in h.state().calls.values() if c.kind == "tool_call"][0]
    assert call.handler == "client" and call.deadline_at is None
    settle(h.store, h.queue, h.caller, h.session_id or "", SettleBody(type="tool.result", id=call.id, result="sent"))
    h.settle()
    assert h.view()["messages"][-1]["content"] == "Email sent."


def test_worker_llm_path_llm_execute_answered_with_llm_result() -> None:
    log: list[dict[str, Any]] = []

    def execute(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "llm.result", "message": {"role": "assistant", "content": "from my model"},
                             "usage": {"prompt_tokens": 3, "completion_tokens": 3}, "cost": 0.01}]}

    h = Harness(proposing(log, llm_execute=execute), agent={"llm": {"provider": "worker"}})
    h.say("say hi")
    [exe] = [r["trigger"] for r in log if r["trigger"]["type"] == "llm.execute"]
    assert set(exe) >= {"id", "request", "stream", "attempt"}
    view = h.view()
    assert view["messages"][-1]["content"] == "from my model" and view["status"] == "done"
    assert view["usage"]["cost"] == pytest.approx(0.01)


def over_budget() -> tuple[Harness, list[dict[str, Any]]]:
    """An operator's session whose first, priced model call crosses a 0.001 budget."""
    log: list[dict[str, Any]] = []
    agent = {"budget": {"max_cost": 0.001}, "llm": {"provider": "scripted", "price_in": 1.0, "price_out": 1.0,
                                                    "script": [{"reply": {"content": "spent"}}]}}
    h = Harness(proposing(log), agent=agent, origin="operator")
    h.say("say something long enough to cost")
    return h, log


def test_budget_stop_is_a_global_system_interrupt_and_a_raised_budget_goes_on() -> None:
    h, _ = over_budget()
    view = h.view()
    [stop] = view["interrupts"]
    assert stop["origin"] == "system" and stop["reason"] == "budget_exceeded" and "anchor" not in stop
    assert stop["payload"]["spent"] >= 0.001
    client = Caller("t1", "someone", "client")
    with pytest.raises(Refusal):
        h.resume(stop["interrupt_id"], {"budget": 1.0}, caller=client)  # 403: clients cannot clear system holds
    h.resume(stop["interrupt_id"], {"budget": 1.0})
    assert h.state().header.budget == 1.0
    assert h.view()["status"] == "done"


def test_budget_resume_without_a_raise_leaves_llm_calls_refused() -> None:
    h, log = over_budget()
    h.resume(h.open_interrupt()["interrupt_id"], {"ok": True})
    sessions.submit(h.store, h.queue, h.caller, h.session_id, ClientMessageInput.model_validate(
        {"type": "client.message", "message": {"role": "user", "content": "again"}}))
    h.settle()
    finished = [r["trigger"] for r in log if r["trigger"]["type"] == "llm.finished"]
    assert finished[-1]["ok"] is False and finished[-1]["code"] == "budget_exceeded"


def test_sub_agent_settles_the_parent_call_and_keeps_going_while_the_parent_is_parked() -> None:
    log: list[dict[str, Any]] = []
    script = [
        {"when": {"role": "user", "contains": "research"}, "reply": {"tool_calls": [
            {"name": "researcher", "arguments": {"task": "find Bob's address"}},
            {"name": "send_email", "arguments": {"to": "bob"}}]}},
        {"when": {"role": "user"}, "reply": {"content": "bob@example.com"}},
        {"when": {"role": "tool"}, "reply": {"content": "all done"}},
    ]

    def execute(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "interrupt", "reason": "confirm"}]}

    h = Harness(proposing(log, tool_execute=execute),
                agent={"sub_agents": [{"name": "researcher", "agent_id": "assistant"}],
                       "llm": {"provider": "scripted", "script": script}})
    h.say("research and email")
    parent = h.state()
    [sub] = [c for c in parent.calls.values() if c.kind == "sub_agent"]
    assert h.view()["status"] == "interrupted"
    # The child runs while the parent branch is parked (the harness plays the queue: kick it).
    h.runner.run("t1", sub.child_session_id or "")
    child = h.store.load("t1", sub.child_session_id or "")
    assert child is not None and child.header.ancestry == [h.session_id]
    parent = h.state()
    assert parent.calls[sub.id].status == "settled" and parent.calls[sub.id].result == "bob@example.com"
    assert not [r for r in log if r["trigger"]["type"] == "sub_agent.finished"]  # held (R10)
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    finished = [r for r in log if r["trigger"]["type"] == "sub_agent.finished"]
    assert finished and finished[0]["trigger"]["session_id"] == sub.child_session_id
    child_requests = [r for r in log if r["session_id"] == sub.child_session_id]
    assert child_requests[0]["ancestry"] == [h.session_id]


def test_retryable_tool_error_starts_a_new_attempt_within_the_policy() -> None:
    log: list[dict[str, Any]] = []

    def execute(req: dict[str, Any]) -> dict[str, Any]:
        if req["trigger"]["attempt"] == 1:
            return {"actions": [{"type": "tool.error", "error": "flaky", "retryable": True}]}
        return {"actions": [{"type": "tool.result", "result": "sent"}]}

    h = Harness(proposing(log, tool_execute=execute), agent={"retry": {"tool": {"max_attempts": 2}}})
    h.say("Email Bob")
    attempts = [r["trigger"]["attempt"] for r in log if r["trigger"]["type"] == "tool.execute"]
    assert attempts == [1, 2]
    assert h.view()["messages"][-1]["content"] == "Email sent."
    # With the default policy (one attempt) a retryable error is terminal.
    log2: list[dict[str, Any]] = []
    h2 = Harness(proposing(log2, tool_execute=execute))
    h2.say("Email Bob")
    [finished] = [r["trigger"] for r in log2 if r["trigger"]["type"] == "tool.finished"]
    assert finished["ok"] is False and finished["error"] == "flaky"


def test_message_send_queues_a_client_message_into_another_session() -> None:
    target = Harness(proposing([]))
    target.say("say hi")
    sender_log: list[dict[str, Any]] = []

    def start(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "message.send", "session_id": target.session_id,
                             "message": {"role": "user", "content": "say hi from a colleague"}}]}

    sender = Harness(proposing(sender_log, session_start=start))
    sender.say("say hi")
    target.settle()
    users = [m["content"] for m in target.view()["messages"] if m["role"] == "user"]
    assert users == ["say hi", "say hi from a colleague"]
    assert target.view()["status"] == "done"


def test_retryable_llm_errors_back_off_then_fail_deadline_exceeded() -> None:
    log: list[dict[str, Any]] = []
    error = {"actions": [{"type": "llm.error", "error": "overloaded", "code": "throttled", "retryable": True}]}
    h = Harness(proposing(log, llm_execute=error), agent={"llm": {"provider": "worker"},
                                                          "retry": {"llm": {"max_attempts": 3}}})
    h.say("say hi")
    for step in range(1, 5):
        later(h, 100 * step)
    attempts = [r["trigger"]["attempt"] for r in log if r["trigger"]["type"] == "llm.execute"]
    assert attempts == [1, 2, 3]
    [finished] = [r["trigger"] for r in log if r["trigger"]["type"] == "llm.finished"]
    assert finished["ok"] is False and finished["code"] == "deadline_exceeded"
    assert finished["error_value"]["last_code"] == "throttled"


STALLING_CHILD = [  # the parent asks the researcher; the researcher calls a tool nobody settles
    {"when": {"role": "user", "contains": "research"}, "reply": {"tool_calls": [
        {"name": "researcher", "arguments": {"task": "look Bob up"}}]}},
    {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "lookup", "arguments": {"q": "bob"}}]}},
    {"when": {"role": "tool"}, "reply": {"content": "done"}},
]


def sub_agent_harness(tool_execute: Any, **retry: Any) -> tuple[Harness, list[dict[str, Any]]]:
    log: list[dict[str, Any]] = []
    agent: dict[str, Any] = {"sub_agents": [{"name": "researcher", "agent_id": "assistant"}],
                             "llm": {"provider": "scripted", "script": STALLING_CHILD}}
    if retry:
        agent["retry"] = {"sub_agent": retry}
    h = Harness(proposing(log, tool_execute=tool_execute), agent=agent)
    h.say("research Bob")
    return h, log


def sub_call(h: Harness) -> Any:
    [call] = [c for c in h.state().calls.values() if c.kind == "sub_agent"]
    return call


def fire_deadline(h: Harness, call: Any) -> None:
    h.runner.clock = lambda: (call.deadline_at or 0) + 5
    h.runner.handle(work_message({"kind": "deadline", "tenant": "t1", "session_id": h.session_id, "call_id": call.id,
                     "attempt": call.attempt}))


def extensions(h: Harness, reason: str) -> int:
    return len([e for e in h.events("call.deadline_extended") if e["data"]["reason"] == reason])


def test_sub_agent_that_makes_no_progress_is_replaced_then_fails_deadline_exceeded() -> None:
    h, log = sub_agent_harness({}, max_attempts=2)  # the child's lookup is deferred forever
    first = sub_call(h)
    h.runner.run("t1", first.child_session_id or "")
    assert first.deadline_at is not None and first.status == "open"
    fire_deadline(h, first)  # the child moved since it was spawned: alive, so it gets more time
    assert sub_call(h).attempt == 1 and extensions(h, "making progress") == 1
    fire_deadline(h, sub_call(h))  # nothing moved for a whole attempt: replaced
    second = sub_call(h)
    assert second.attempt == 2 and second.child_session_id != first.child_session_id
    h.runner.run("t1", second.child_session_id or "")
    assert h.store.load("t1", second.child_session_id or "") is not None
    fire_deadline(h, second)
    fire_deadline(h, sub_call(h))
    call = sub_call(h)
    assert call.status == "settled" and call.error["code"] == "deadline_exceeded"
    finished = [r["trigger"] for r in log if r["trigger"]["type"] == "sub_agent.finished"]
    assert len(finished) == 1 and finished[0]["ok"] is False
    fire_deadline(h, call)  # a repeated timer changes nothing
    assert len([r for r in log if r["trigger"]["type"] == "sub_agent.finished"]) == 1


def test_a_replaced_childs_late_result_is_ignored() -> None:
    h, log = sub_agent_harness({})
    first = sub_call(h)
    fire_deadline(h, first)
    fire_deadline(h, sub_call(h))
    assert sub_call(h).attempt == 2
    h.runner.transact("t1", h.session_id or "", lambda s: subagents.apply_child_result(
        s, first.id, True, "stale", None, first.child_session_id))
    assert sub_call(h).status == "open"
    assert [e for e in h.events("call.result_ignored") if e["data"]["call_id"] == first.id]


def test_r12_a_sub_agent_waiting_on_a_person_does_not_time_out() -> None:
    h, log = sub_agent_harness({"actions": [{"type": "interrupt", "reason": "may I look Bob up?"}]})
    call = sub_call(h)
    h.runner.run("t1", call.child_session_id or "")
    child = h.store.load("t1", call.child_session_id or "")
    assert child is not None and child.open_interrupts()
    fire_deadline(h, call)
    fire_deadline(h, sub_call(h))  # still waiting, still not timed out, however often it fires
    after = sub_call(h)
    assert after.status == "open" and after.attempt == 1 and after.deadline_at > (call.deadline_at or 0)
    assert extensions(h, "waiting on an interrupt") == 2


def test_llm_call_stream_flag_reaches_the_worker_llm_in_llm_execute() -> None:
    log: list[dict[str, Any]] = []

    def llm_call_streamed(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "llm.call", "stream": True}]}

    def execute(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "llm.result", "message": {"role": "assistant", "content": "ok"}}]}

    h = Harness(proposing(log, client_messages=llm_call_streamed, llm_execute=execute),
                agent={"llm": {"provider": "worker"}})
    h.say("say hi")
    [exe] = [r["trigger"] for r in log if r["trigger"]["type"] == "llm.execute"]
    assert exe["stream"] is True and exe["request"]["stream"] is True
