"""One answer, whatever the channel (PROTOCOL.md §2.3.1): every channel a person answers from
(the API, AG-UI, A2A, MCP's `answer_approval`, a Slack button, a one-click link, the `holdpoint`
command, the console in Chromium) x {no policy, a quorum of two, an expiry}, against the shipped
`examples/seed_worker.py` as it is (the `worker` fixture: no wrapper reads the answer for it), over
HTTP on the local stack. Each case asserts the `interrupt.resumed` the worker received and whether
the email was sent:

- no policy: bob approves through the channel; the worker gets `payload: {"approved": true}`,
  `verdict: "approved"` and the channel's name, and sends the email;
- a quorum of two (ann and bob): ann approves through the API, bob denies through the channel; the
  worker gets bob's `{"approved": false}`, `verdict: "denied"` and both answers, and sends nothing;
- an expiry (300 s, `on_expiry: deny`): bob approves through the channel before it; the worker
  gets `expired: false` and sends the email.

The expiry's own answer (nobody answers) is tests/e2e/test_expiry_inbox_e2e.py's."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser

from tests.conftest import ROOT
from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_inbox_page import answer_on_its_card
from tests.e2e.test_notify_e2e import SECRET_REF, Receiver
from tests.e2e.test_slack_e2e import SIGNING, click, entry, slack_stack
from tests.slack_fake import SlackFake, click_body, sign
from tests.stack import Api, declare_agent, resumed_triggers, wait_execution
from tests.waiting import wait_for

QUORUM = {"approval": {"subjects": ["ann", "bob"], "quorum": 2}}
EXPIRY = {"interrupt_expires_in": 300, "interrupt_on_expiry": "deny"}
MCP_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def stack(local_stack_factory: Callable[..., Any], worker: Any, slack_fake: SlackFake) -> Any:
    return slack_stack(local_stack_factory, slack_fake)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    yield out
    out.server.shutdown()


@dataclass
class Case:
    """One run of the matrix: the stack, the seed worker's log, the approvers, and what answers."""

    stack: Any
    api: Api
    seen: list[dict[str, Any]]
    slack: SlackFake
    receiver: Receiver
    browser: Browser
    ann: Api = field(init=False)
    bob: Api = field(init=False)

    def __post_init__(self) -> None:
        self.ann, self.bob = approver(self.stack, "ann"), approver(self.stack, "bob")

    def declare(self, worker_url: str, **agent: Any) -> None:
        notify = [entry(self.stack, users={"U0ANN": "ann", "U0BOB": "bob"}),
                  {"url": self.receiver.url, "secret": SECRET_REF, "events": ["interrupt.raised"], "approver": "bob"}]
        declare_agent(self.api, worker_url, notify=notify, **agent)

    def parked(self) -> tuple[str, str]:
        sid = self.api.start()
        [interrupt] = self.api.wait_status(sid, "interrupted")["interrupts"]
        wait_execution(self.stack, sid, interrupt["interrupt_id"], "RUNNING")
        return sid, interrupt["interrupt_id"]


Answer = Callable[[Case, str, str, bool], None]


def by_api(case: Case, sid: str, iid: str, approve: bool) -> None:
    answered = case.bob.resume(sid, iid, {"approved": approve})
    assert answered.status_code == 200, answered.text


def by_cli(case: Case, sid: str, iid: str, approve: bool) -> None:
    env = {**os.environ, "HOLDPOINT_URL": case.stack.base_url,
           "HOLDPOINT_API_KEY": case.bob.http.headers["Authorization"].removeprefix("Bearer ")}
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "holdpoint"), "approve" if approve else "deny", sid, iid],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def by_console(case: Case, sid: str, iid: str, approve: bool) -> None:
    key = case.bob.http.headers["Authorization"].removeprefix("Bearer ")
    answer_on_its_card(case.browser, case.stack, key, iid, approve)


def by_agui(case: Case, sid: str, iid: str, approve: bool) -> None:
    run = case.bob.req("POST", "/v1/channels/ag-ui/agents/assistant/run", {
        "threadId": sid, "runId": f"run-{uuid.uuid4().hex[:8]}", "messages": [],
        "resume": [{"interruptId": iid, "status": "resolved", "payload": {"approved": approve}}]})
    assert run.status_code == 200 and "RUN_ERROR" not in run.text, run.text


def by_a2a(case: Case, sid: str, iid: str, approve: bool) -> None:
    turn = case.api.view(sid)["turn_id"]
    sent = case.bob.req("POST", f"/a2a/{case.stack.tenant}/assistant", {
        "jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": {
            "messageId": f"m-{uuid.uuid4().hex[:8]}", "role": "ROLE_USER", "taskId": f"{sid}~{turn}",
            "parts": [{"data": {"approved": approve}}]}}})
    assert sent.status_code == 200 and "error" not in sent.json(), sent.text


def by_mcp(case: Case, sid: str, iid: str, approve: bool) -> None:
    called = case.bob.req("POST", "/mcp/assistant", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "_meta": MCP_META, "name": "answer_approval",
            "arguments": {"id": f"{sid}~{iid}", "payload": {"approved": approve}}}})
    assert called.status_code == 200 and not called.json()["result"]["isError"], called.text


def by_slack(case: Case, sid: str, iid: str, approve: bool) -> None:
    ts, message = wait_for(lambda: next(((ts, m) for ts, m in list(case.slack.posts) if sid in str(m["blocks"])), None),
                           "the interrupt posted to Slack")
    body = click_body(message, ts, 0 if approve else 1, user="U0BOB")  # Approve, Deny: the default buttons
    clicked = click(case.stack, body, sign(SIGNING, body))
    assert clicked.status_code == 200, clicked.text


def by_link(case: Case, sid: str, iid: str, approve: bool) -> None:
    raised = wait_for(lambda: [h for h in case.receiver.of("interrupt.raised") if h["body"]["interrupt_id"] == iid],
                      "the webhook's interrupt.raised")
    option = "approve" if approve else "deny"
    followed = requests.post(raised[0]["body"]["links"][option], data={"confirm": option}, timeout=60)
    assert followed.status_code == 200 and "recorded" in followed.text, followed.text


CHANNELS: dict[str, tuple[Answer, str]] = {
    "api": (by_api, "api"), "cli": (by_cli, "api"), "console": (by_console, "api"), "agui": (by_agui, "agui"),
    "a2a": (by_a2a, "a2a"), "mcp": (by_mcp, "mcp"), "slack": (by_slack, "slack"), "link": (by_link, "link")}


@pytest.mark.parametrize("channel", CHANNELS)
def test_one_answer_shape_on_every_channel_with_and_without_a_policy(
        channel: str, stack: Any, api: Api, worker: tuple[str, list[dict[str, Any]]], slack_fake: SlackFake,
        receiver: Receiver, browser: Browser) -> None:
    answer, name = CHANNELS[channel]
    case = Case(stack, api, worker[1], slack_fake, receiver, browser)

    case.declare(worker[0])  # no policy: bob approves, the email is sent
    sid, iid = case.parked()
    answer(case, sid, iid, True)
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
    [trigger] = resumed_triggers(case.seen, sid)
    assert (trigger["payload"], trigger["verdict"], trigger["channel"], trigger["expired"]) == (
        {"approved": True}, "approved", name, False)
    assert trigger["responder"]["subject"] == "bob"

    case.declare(worker[0], **QUORUM)  # a quorum of two: ann approves, bob's Deny decides, nothing is sent
    sid, iid = case.parked()
    assert case.ann.resume(sid, iid, {"approved": True}).json()["status"] == "open"
    answer(case, sid, iid, False)
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "I did not send it."
    [trigger] = resumed_triggers(case.seen, sid)
    assert (trigger["payload"], trigger["verdict"], trigger["channel"]) == ({"approved": False}, "denied", name)
    assert [(a["subject"], a["status"], a["channel"]) for a in trigger["approvals"]] == [
        ("ann", "approved", "api"), ("bob", "denied", name)]

    case.declare(worker[0], **EXPIRY)  # an expiry that would deny: bob approves in time, the email is sent
    sid, iid = case.parked()
    answer(case, sid, iid, True)
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
    [trigger] = resumed_triggers(case.seen, sid)
    assert (trigger["payload"], trigger["verdict"], trigger["expired"]) == ({"approved": True}, "approved", False)
