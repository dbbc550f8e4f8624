"""The AG-UI channel (the AG-UI bridge: its translation, its service, its routes) on moto's in-process AWS with the real
engine: a thread is a session, a run a turn; a parked turn ends its run with an interrupt outcome;
`resume[]` goes through the resume path (A1 applies, a replay is a no-op); bad input is a 400
naming the field and records nothing; other tenants and other subjects get 404."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from holdpoint.bridges.agui import models
from holdpoint.bridges.agui import service as agui
from holdpoint.bridges.agui import translation as wire
from holdpoint.core.errors import Refusal
from holdpoint.services.caller import Caller
from tests.harness import Harness
from tests.unit.test_api import API, CONTEXT, api, assert_error, http_event, table_items

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from seed_worker import decide as seed_decide  # noqa: E402

__all__ = ["api"]
RUN = "/v1/channels/ag-ui/agents/assistant/run"
CONNECT = "/v1/channels/ag-ui/agents/assistant/connect"


def agui_worker(log: list[dict[str, Any]]) -> Any:
    """The seed's own `decide`, unwrapped: an AG-UI answer reaches it as any other does."""

    def decide(req: dict[str, Any]) -> Any:
        log.append(req)
        return seed_decide(req["trigger"], req["proposed"])

    return decide


def harness() -> Harness:
    log: list[dict[str, Any]] = []
    h = Harness(agui_worker(log), tenant="dev")
    h.log = log
    return h


def body(thread: str, run: str, messages: list[dict[str, Any]], **extra: Any) -> models.RunAgentInput:
    return models.RunAgentInput.model_validate({"threadId": thread, "runId": run, "messages": messages, **extra})


def run(h: Harness, payload: models.RunAgentInput, caller: Caller | None = None) -> list[dict[str, Any]]:
    return agui.run(h.store, h.queue, h.parking, caller or h.caller, "assistant", payload, wait_secs=0)


def connect(h: Harness, thread: str, caller: Caller | None = None) -> list[dict[str, Any]]:
    return agui.connect(h.store, caller or h.caller, "assistant", body(thread, "connect-1", []), wait_secs=0)


def post(path: str, payload: Any, **kw: Any) -> tuple[int, Any]:
    reply = API.handler(http_event("POST", path, payload, **kw), CONTEXT)
    text = reply["body"]
    if reply["headers"].get("Content-Type", "").startswith("text/event-stream"):
        return reply["statusCode"], [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return reply["statusCode"], json.loads(text)


def parked_thread(h: Harness, thread: str = "thread-1",
                  caller: Caller | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run "Email Bob" on a new thread, let the engine park it; the connect events and the interrupt."""
    h.caller = caller or Caller("dev", "dev-user", "client")
    first = run(h, body(thread, "run-1", [{"id": "u1", "role": "user", "content": "Email Bob"}]))
    assert [e["type"] for e in first] == ["RUN_STARTED", "CUSTOM"]  # the cap (0 s here) came first
    assert first[-1]["name"] == "holdpoint.continue"
    h.session_id = thread
    h.settle()
    events = connect(h, thread)
    return events, events[-1]["outcome"]["interrupts"][0]


def test_agui_a_parked_turn_ends_the_run_with_an_interrupt_outcome(api: dict[str, str]) -> None:
    h = harness()
    events, interrupt = parked_thread(h)
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert events[-1]["outcome"]["type"] == "interrupt"
    view = h.open_interrupt()
    assert interrupt["id"] == view["interrupt_id"] and interrupt["reason"] == "confirm"
    assert interrupt["message"] == "Send the email?" and interrupt["toolCallId"] == view["call_id"]
    assert interrupt["metadata"]["origin"] == "worker" and interrupt["metadata"]["action"]["tool"] == "send_email"
    assert "responseSchema" not in interrupt and "expiresAt" not in interrupt
    roles = [m["role"] for m in events[1]["messages"]]
    assert roles == ["user", "assistant"] and events[1]["messages"][0]["id"] == "u1"
    assert events[1]["messages"][1]["toolCalls"][0]["function"]["name"] == "send_email"


def test_agui_follow_streams_the_turns_messages(api: dict[str, str]) -> None:
    h = harness()
    parked_thread(h)
    events = agui.follow(h.store, "dev", "thread-1", "run-1", 0, None, 0, lambda: 0, set())
    types = [e["type"] for e in events]
    assert types == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "MESSAGES_SNAPSHOT",
                     "RUN_FINISHED"]
    assert json.loads(events[2]["delta"]) == {"to": "bob"}


def test_agui_interrupt_carries_response_schema_and_expiry(api: dict[str, str]) -> None:
    h = harness()
    parked_thread(h)
    schema = {"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}}
    from holdpoint.services import sessions

    sessions.raise_interrupt(h.store, h.queue, h.caller, "thread-1", reason="review", payload=None, global_=True,
                             interrupt_id="int-review", expires_in=60, request_id="r1", response_schema=schema)
    out = connect(h, "thread-1")[-1]["outcome"]["interrupts"]
    review = next(i for i in out if i["id"] == "int-review")
    assert review["responseSchema"] == schema and review["expiresAt"].endswith("Z")


def test_agui_resume_entries_resume_and_a_replay_is_a_no_op(api: dict[str, str]) -> None:
    h = harness()
    events, interrupt = parked_thread(h)
    snapshot = events[1]["messages"]
    again = body("thread-1", "run-2", snapshot,
                 resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}])
    out = run(h, again)
    assert out[0]["type"] == "RUN_STARTED" and out[-1]["name"] == "holdpoint.continue"
    h.wake(interrupt["id"], "resumed")
    done = connect(h, "thread-1")
    assert done[-1] == {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "connect-1",
                        "outcome": {"type": "success"}}
    assert done[-2]["messages"][-1]["content"] == "Email sent."
    head = h.view()["head_id"]
    replay = run(h, again)
    assert h.view()["head_id"] == head  # a retried run's older messages do not move the head back
    assert replay[-1]["type"] == "RUN_FINISHED" and replay[-1]["outcome"] == {"type": "success"}
    resumed = [r for r in h.log if r["trigger"]["type"] == "interrupt.resumed"]
    [trigger] = [r["trigger"] for r in resumed]
    assert trigger["payload"] == {"approved": True}  # the answer the person gave, as on every channel
    assert (trigger["verdict"], trigger["channel"], trigger["expired"]) == ("approved", "agui", False)


def test_agui_bad_resume_names_the_entry_field_and_records_nothing(api: dict[str, str]) -> None:
    h = harness()
    _, interrupt = parked_thread(h)
    schema = {"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}}
    from holdpoint.services import sessions

    sessions.raise_interrupt(h.store, h.queue, h.caller, "thread-1", reason="review", payload=None, global_=False,
                             interrupt_id="int-review", expires_in=None, request_id="r1", response_schema=schema)
    before = table_items()
    entries = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}},
               {"interruptId": "int-review", "status": "resolved", "payload": {"approved": "yes"}}]
    status, err = post(RUN, {"threadId": "thread-1", "runId": "run-2", "messages": [], "resume": entries})
    assert_error(status, err, 400, code="invalid_resume", param="resume[1].payload.approved")
    assert table_items() == before
    status, err = post(RUN, {"threadId": "thread-1", "runId": "run-2", "resume": entries[:1],
                             "messages": [{"id": "u2", "role": "user", "content": "x" * 300_000}]})
    assert_error(status, err, 400, param="messages[0].content")  # checked before the resume is applied
    assert table_items() == before
    assert {i["interrupt_id"] for i in h.view()["interrupts"]} == {interrupt["id"], "int-review"}


def test_agui_bad_input_is_400_naming_the_field(api: dict[str, str]) -> None:
    before = table_items()
    good = {"threadId": "t-1", "runId": "r-1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    cases = [
        ({**good, "threadId": None}, "threadId"),
        ({k: v for k, v in good.items() if k != "runId"}, "runId"),
        ({**good, "threadId": "not an id"}, "threadId"),
        ({**good, "messages": [{"id": "u1", "role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({**good, "messages": "hi"}, "messages"),
        ({**good, "resume": [{"interruptId": "i1", "status": "maybe"}]}, "resume[0].status"),
        ({**good, "messages": [{"id": "u1", "role": "user", "content": 5}]}, "messages[0].content"),
    ]
    for payload, param in cases:
        assert_error(*post(RUN, payload), 400, param=param)
    assert_error(*post(RUN, [1, 2]), 400)
    assert_error(*post(RUN, {**good, "resume": [{"interruptId": "i1", "status": "resolved"}]}), 404,
                 param="threadId")  # resume[] answers interrupts of a thread that does not exist
    assert table_items() == before


def test_agui_unknown_agent_and_other_tenants_get_404(api: dict[str, str]) -> None:
    h = harness()
    parked_thread(h)
    before = table_items()
    status, err = post("/v1/channels/ag-ui/agents/nobody/run",
                       {"threadId": "t-2", "runId": "r-1", "messages": [{"id": "u1", "role": "user", "content": "x"}]})
    assert_error(status, err, 404, param="agent_id")
    assert_error(*post(CONNECT, {"threadId": "thread-1", "runId": "c-1", "messages": []}, tenant="other"), 404)
    assert_error(*post(CONNECT, {"threadId": "nothing", "runId": "c-1", "messages": []}), 404)
    assert_error(*post("/v1/channels/ag-ui/agents/nobody/run", {"threadId": "t-3", "runId": "r-1", "messages": []}),
                 404, param="agent_id")
    assert table_items() == before


def test_agui_client_tokens_reach_only_their_own_thread(api: dict[str, str]) -> None:
    h = harness()
    owner = Caller("dev", "dev-user", "client", own_only=True)
    parked_thread(h, caller=owner)
    assert connect(h, "thread-1", owner)[-1]["outcome"]["type"] == "interrupt"
    for caller in (Caller("dev", "eve", "client", own_only=True),
                   Caller("dev", "dev-user", "client", session_id="other", own_only=True)):
        try:
            connect(h, "thread-1", caller)
        except Refusal as exc:
            assert exc.code == "not_found"
        else:
            raise AssertionError("a client token followed another subject's thread")
    parked_thread(h, "thread-2", caller=Caller("dev", "dev-user", "client"))  # the API key `dev-user`'s
    with pytest.raises(Refusal) as refused:
        connect(h, "thread-2", owner)
    assert refused.value.code == "not_found"


def test_agui_messages_map_both_ways() -> None:
    ag = models.RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": [
        {"id": "s1", "role": "developer", "content": "be brief"},
        {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function",
                                                         "function": {"name": "f", "arguments": "{}"}}]},
        {"id": "t1", "role": "tool", "content": "ok", "toolCallId": "c1"},
        {"id": "x1", "role": "activity", "activityType": "plan", "content": {"steps": []}},
    ]})
    held = wire.messages_in(ag.messages)
    assert held == [{"id": "s1", "role": "system", "content": "be brief"},
                    {"id": "a1", "role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                                      "function": {"name": "f", "arguments": "{}"}}]},
                    {"id": "t1", "role": "tool", "content": "ok", "tool_call_id": "c1"}]
    back = [wire.message_out(m) for m in held]
    assert back[1]["toolCalls"][0]["id"] == "c1" and back[2] == {"id": "t1", "role": "tool", "content": "ok",
                                                                 "toolCallId": "c1"}
    assert wire.message_events(held[2]) == [{"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1",
                                             "content": "ok", "role": "tool"}]
