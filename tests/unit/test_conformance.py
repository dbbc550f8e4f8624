"""Captured decision requests validate against the upstream protocol (PROTOCOL.md §2.2), and the
answers upstream allows are accepted and applied (§2.4). The schema is `upstream_protocol.py`."""

from __future__ import annotations

from collections import Counter
from typing import Any

import jsonschema
import pytest

from holdpoint.core.protocols.client import ClientActionInput
from holdpoint.services import sessions
from tests.harness import Harness, proposing
from tests.unit.upstream_protocol import schema

pytestmark = pytest.mark.usefixtures("memory")

REQUEST = jsonschema.Draft202012Validator(schema("DecisionRequest"))
RESPONSE = jsonschema.Draft202012Validator(schema("DecisionResponse"))

MCP = {"content": [{"type": "text", "text": "sent"}], "structuredContent": {"sent": True}}


def validate_all(log: list[dict[str, Any]]) -> Counter[str]:
    for req in log:
        if req["trigger"]["type"] == "turn.finished":
            # Holdpoint's opt-in addition: upstream's DecisionTrigger refuses it (which is why it is
            # off by default); the rest of the request conforms.
            assert not jsonschema.Draft202012Validator(schema("DecisionTrigger")).is_valid(req["trigger"])
            req = {**req, "trigger": {"type": "session.start"}}
        errors = sorted(REQUEST.iter_errors(req), key=lambda e: list(e.absolute_path))
        assert not errors, (req["trigger"]["type"], [f"{list(e.absolute_path)}: {e.message}" for e in errors[:3]])
    return Counter(r["trigger"]["type"] for r in log)


def run_sessions(log: list[dict[str, Any]]) -> None:
    # 1. The seed flow: a tool call paused for approval, resumed, settled with an MCP object.
    def execute(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "interrupt", "reason": "confirm", "payload": {"m": "send?"}}]}

    def resumed(req: dict[str, Any]) -> dict[str, Any]:
        return {"actions": [{"type": "tool.result", "result": MCP}]}

    h = Harness(proposing(log, tool_execute=execute, interrupt_resumed=resumed),
                agent={"triggers": {"turn.finished": True}})
    h.say("Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    sessions.submit(h.store, h.queue, h.caller, h.session_id, ClientActionInput.model_validate(
        {"type": "client.action", "name": "thumbs_up", "args": {"n": 1}}))
    h.settle()
    # 2. Invalid and malformed arguments (the proposal is a ready tool.error).
    script = [{"when": {"role": "user"}, "reply": {"tool_calls": [
        {"name": "send_email", "arguments": {"cc": 1}}, {"name": "lookup", "arguments": "not json"}]}},
        {"when": {"role": "tool"}, "reply": {"content": "could not"}}]
    Harness(proposing(log), agent={"llm": {"provider": "scripted", "script": script}}).say("go")
    # 3. A worker-run LLM: llm.execute, then a failed one (proposal null, the engine fails the turn).
    def llm(req: dict[str, Any]) -> dict[str, Any]:
        if "fail" in str(req["trigger"]["request"]["messages"]):
            return {"actions": [{"type": "llm.error", "error": "nope", "code": "throttled"}]}
        return {"actions": [{"type": "llm.result", "response": {"model": "m", "content": "hi"}}]}

    w = Harness(proposing(log, llm_execute=llm), agent={"llm": {"provider": "worker"}, "model": "m"})
    w.say("say hi")
    w.say("fail please")
    # 4. A sub-agent.
    sub = [{"when": {"role": "user", "contains": "research"}, "reply": {"tool_calls": [
        {"name": "researcher", "arguments": {"task": "find Bob"}}]}},
        {"when": {"role": "user"}, "reply": {"content": "bob@example.com"}},
        {"when": {"role": "tool"}, "reply": {"content": "all done"}}]
    s = Harness(proposing(log), agent={"sub_agents": [{"name": "researcher", "agent_id": "assistant"}],
                                       "llm": {"provider": "scripted", "script": sub}})
    s.say("research it")
    [call] = [c for c in s.state().calls.values() if c.kind == "sub_agent"]
    s.runner.run("t1", call.child_session_id or "")
    s.settle()


def test_every_captured_request_validates_against_upstream() -> None:
    log: list[dict[str, Any]] = []
    run_sessions(log)
    counts = validate_all(log)
    assert set(counts) == {"session.start", "client.messages", "client.action", "tool.execute", "tool.finished",
                           "llm.execute", "llm.finished", "sub_agent.finished", "interrupt.resumed",
                           "turn.finished"}, counts
    statuses = {r["trigger"]["input"]["status"] for r in log if r["trigger"]["type"] == "tool.execute"}
    assert statuses == {"valid", "invalid", "malformed"}
    mcp = [r["trigger"] for r in log if r["trigger"]["type"] == "tool.finished" and r["trigger"].get("result_value")]
    assert mcp and isinstance(mcp[0]["result"], str) and mcp[0]["result_value"] == MCP
    kinds = {n["kind"] for r in log for n in r["message_tree"]["nodes"]}
    controls = {n["control"]["kind"] for r in log for n in r["message_tree"]["nodes"] if n["kind"] == "control"}
    assert kinds == {"message", "control"} and controls == {"interrupt", "resume"}
    assert any(r["proposed"] is None for r in log)  # the failed worker LLM call
    print(dict(counts), "requests:", len(log))


def test_turn_finished_is_off_by_default() -> None:
    log: list[dict[str, Any]] = []
    Harness(proposing(log)).say("say hi")
    assert "turn.finished" not in {r["trigger"]["type"] for r in log}
    validate_all(log)


def test_upstream_shaped_answers_are_accepted_and_applied() -> None:
    answers: dict[str, Any] = {
        "client_messages": {"messages": [{"role": "assistant", "content": "thinking"}], "state": None,
                            "actions": [{"type": "llm.call", "handler": "worker", "reasoning": {"effort": "low"}}]},
        "llm_execute": {"actions": [{"type": "llm.result", "response": {
            "model": "m", "content": None, "finish_reason": "tool_calls", "usage": {"prompt_tokens": 3},
            "tool_calls": [{"id": "tc-1", "type": "function",
                            "function": {"name": "send_email", "arguments": "{\"to\":\"bob\"}"}}]}}]},
        "llm_finished": lambda r: ({"actions": [{"type": "tool.call", "id": "tc-1", "name": "send_email",
                                                 "arguments": {"to": "bob"}, "handler": "worker",
                                                 "retry": {"max_retries": 0, "backoff_base_secs": 1,
                                                           "backoff_max_secs": 1}}]}
                                   if r["trigger"]["message"].get("tool_calls") else {"actions": [{"type": "done"}]}),
        "tool_execute": {"actions": [{"type": "tool.error", "error": "smtp down", "code": "provider_error",
                                      "detail": {"host": "smtp"}, "retryable": False}]},
        "tool_finished": {"state": None, "messages": [], "actions": [{"type": "done"}]},
    }
    for answer in answers.values():
        if not callable(answer):
            assert not list(RESPONSE.iter_errors(answer)), answer
    log: list[dict[str, Any]] = []
    h = Harness(proposing(log, **answers), agent={"model": "m"})
    h.say("Email Bob")
    assert h.view()["status"] == "done", h.events("decision.failed")
    assert not h.events("decision.failed")
    contents = [m.get("content") for m in h.view()["messages"]]
    assert "thinking" in contents
    [finished] = [r["trigger"] for r in log if r["trigger"]["type"] == "tool.finished"]
    assert finished["ok"] is False and finished["error_value"] == {
        "message": "smtp down", "code": "provider_error", "detail": {"host": "smtp"}}
    validate_all(log)
