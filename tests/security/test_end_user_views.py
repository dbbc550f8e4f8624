"""What an end user reads of an agent (issue: close the holes, item 1). `GET /v1/agents/{id}` is 403
for a client token, yet her own session's view once returned the agent's whole config: the system
prompt, the LLM block, the worker's URL, every `notify` entry (webhook URLs with their capability
paths and query tokens, Slack's channel and users map), the secret references and the approver
policy. Now a client token's views carry only what a client UI needs of the agent (its tools'
names and descriptions), decided in one place (`services.sessions.agent_shown`), and `retrying` names
no secret reference. Every view an end user can read is searched for the planted markers: the
session view, the events, the AG-UI run and connect, the A2A task, the MCP approval, the inbox.

In process on moto's AWS with the real engine and services, as the API function runs them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from holdpoint.aws import signing
from holdpoint.bridges.a2a import models as a2a_models
from holdpoint.bridges.a2a import service as a2a
from holdpoint.bridges.agui import models as agui_models
from holdpoint.bridges.agui import service as agui
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.inbox import InboxFilters, inbox
from tests.harness import TOOLS, Harness

pytestmark = pytest.mark.usefixtures("aws")

MARKERS = ("MARK-SYSTEM", "MARK-LLM", "mark-worker.example", "MARK-PATH", "MARK-QUERY", "MARK-SLACK",
           "MARK-USER", "MARK_SECRET", "MARK-APPROVER")
AGENT = {
    "system": "You are MARK-SYSTEM.",
    "llm_note": "MARK-LLM",
    "worker_url_shown": "https://mark-worker.example/decide",
    "notify": [{"url": "https://hooks.example.com/MARK-PATH/x?token=MARK-QUERY"},
               {"slack": {"channel": "#MARK-SLACK", "users": {"U1": "MARK-USER"},
                          "bot_token": "env:MARK_SECRET_BOT", "signing_secret": "env:MARK_SECRET_SIGN"}}],
    "approval": {"subjects": ["user:zoe", "MARK-APPROVER"]},
    "tools": [{**TOOLS[0], "description": "Send an email"}, TOOLS[1]],
}


def leaked(value: Any) -> list[str]:
    text = json.dumps(value, default=str)
    return [m for m in MARKERS if m in text]


@pytest.fixture
def zoe() -> tuple[Harness, Caller]:
    """Zoe's own session (a client token's), parked on send_email, under the planted agent."""
    h = Harness(agent={**AGENT, "llm": {"provider": "scripted", "script": _script(), "note": "MARK-LLM"}})
    h.caller = Caller("t1", "zoe", "client", own_only=True)
    h.say("Email Bob")
    assert h.view()["status"] == "interrupted"
    return h, h.caller


def _script() -> list[dict[str, Any]]:
    from tests.harness import SEND_EMAIL_SCRIPT

    return SEND_EMAIL_SCRIPT


def test_end_user_session_view_carries_only_the_tools_a_client_needs(zoe: tuple[Harness, Caller]) -> None:
    h, caller = zoe
    view = sessions.view(h.store, caller, h.session_id or "")
    assert leaked(view) == []
    assert view["agent"] == {"tools": [{"name": "send_email", "description": "Send an email"},
                                       {"name": "lookup"}]}
    operator = sessions.view(h.store, Caller("t1", "ops", "operator"), h.session_id or "")
    assert operator["agent"]["system"] == "You are MARK-SYSTEM."  # the tenant's own keys still read it all


def test_end_user_events_runs_tasks_and_inbox_carry_no_agent_config(zoe: tuple[Harness, Caller]) -> None:
    h, caller = zoe
    sid = h.session_id or ""
    assert leaked(sessions.events(h.store, caller, sid, 0, 500)) == []
    connected = agui.connect(h.store, caller, "assistant", agui_models.RunAgentInput.model_validate(
        {"threadId": sid, "runId": "r-1", "messages": []}), wait_secs=0)
    assert leaked(connected) == []
    turn = h.view()["turn_id"]
    task = a2a.get(h.store, caller, "assistant", a2a_models.TaskRef.model_validate({"id": f"{sid}~{turn}"}))
    assert leaked(task) == []
    listed = inbox(h.store, signing, caller, 10, None, InboxFilters())
    assert [i["session_id"] for i in listed["interrupts"]] == [sid]
    assert leaked(listed) == [] and listed["interrupts"][0]["policy"] is None
    assert listed["interrupts"][0]["waiting_for"] == {"approvals": 1, "subjects": ["user:zoe"], "groups": []}


def test_end_user_retrying_names_no_secret_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "t1=MARK_*")
    h = Harness(agent={"worker": {"url": "https://w.example.com/", "secret": "env:MARK_SECRET_WORKER"}})
    h.caller = Caller("t1", "zoe", "client", own_only=True)
    h.say("say hi")  # the worker's secret is not set: its delivery waits to be retried
    view = sessions.view(h.store, h.caller, h.session_id or "")
    assert view["retrying"] is not None and "MARK_SECRET" not in json.dumps(view)
    operator = sessions.view(h.store, Caller("t1", "ops", "operator"), h.session_id or "")
    assert "MARK_SECRET_WORKER" in operator["retrying"]["reason"]  # an operator is told which
