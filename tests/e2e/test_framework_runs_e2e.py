"""The seed scenario for each agent framework, with its real package, on the local stack
(PROTOCOL.md §10, sdk/): the scripted agent wants `send_email`; its run ends and is raised in
Holdpoint (`start` exits: nothing runs while a person decides); a person answers (in the inbox
page in Chromium, or through the API); the answer reaches the run's target (the example's
receiver), the run resumes from the framework's own persistence, and the email is sent exactly
once. Also per framework: a denial (nothing sent, the model told why), the same delivery handed
over again (a repeat: nothing resumed), a quorum of two, an expiry under `on_expiry: deny`, an
approver's edit (the tool runs with the edited arguments: `-k edit_before_approve`) and, with the
deployment's key set, a tampered answer refused by its receipt (`-k receipt`).
Select one framework with its word: `pytest -k strands`, `-k langgraph`, `-k openai_agents`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from holdpoint_sdk.client import Client
from holdpoint_sdk.runs import Deliveries, RunDelivery
from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_inbox_page import answer_on_its_card
from tests.frameworks import FRAMEWORKS, SECRET_ENV, TARGET, ExampleRun, Framework
from tests.stack import Api
from tests.waiting import wait_for

pytestmark = pytest.mark.parametrize("framework", FRAMEWORKS, ids=[f.name for f in FRAMEWORKS])


@pytest.fixture
def example(framework: Framework, stack: Any, api: Api, tmp_path: Path) -> ExampleRun:
    assert framework.python.exists(), f"{framework.python} is missing: `make sdk-venvs` builds it"
    return ExampleRun(framework, stack, tmp_path)


def answer_in_the_inbox(browser: Browser, stack: Any, interrupt_id: str, approve: bool) -> None:
    answer_on_its_card(browser, stack, stack.api_key, interrupt_id, approve)


def test_an_approval_in_the_inbox_resumes_the_run_and_sends_once(example: ExampleRun, stack: Any,
                                                                  browser: Browser) -> None:
    resuming = example.resume()
    try:
        raised = example.start()  # its process has ended: the run waits in Holdpoint alone
        [interrupt_id] = raised["interrupts"]
        assert example.outbox() == []
        answer_in_the_inbox(browser, stack, interrupt_id, approve=True)
        [done] = resuming.finished()
    finally:
        resuming.stop()
    assert (done["run_id"], done["verdicts"]) == (raised["run_id"], ["approved"])
    assert "emailed Bob" in done["reply"]
    assert len(example.outbox()) == 1
    [taken] = example.deliveries()
    assert example.again(taken)["repeat"] is True  # the same delivery again: nothing resumed
    assert len(example.outbox()) == 1


def test_a_denial_resumes_the_run_without_sending(example: ExampleRun, stack: Any, browser: Browser) -> None:
    resuming = example.resume()
    try:
        raised = example.start()
        answer_in_the_inbox(browser, stack, raised["interrupts"][0], approve=False)
        [done] = resuming.finished()
    finally:
        resuming.stop()
    assert done["verdicts"] == ["denied"] and "did not email Bob" in done["reply"]
    assert example.outbox() == []


def test_a_quorum_of_two_resumes_only_when_both_approved(example: ExampleRun, stack: Any) -> None:
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    resuming = example.resume()
    try:
        raised = example.start("--approvers", "ann,bob", "--quorum", "2")
        [interrupt_id] = raised["interrupts"]
        assert ann.resume(raised["session_id"], interrupt_id, {"approved": True}).status_code == 200
        assert resuming.line("reply") is None and example.outbox() == []  # one of two: still waiting
        assert bob.resume(raised["session_id"], interrupt_id, {"approved": True}).status_code == 200
        [done] = resuming.finished()
    finally:
        resuming.stop()
    assert done["verdicts"] == ["approved"] and len(example.outbox()) == 1


def test_an_expiry_that_denies_resumes_the_run_without_sending(example: ExampleRun) -> None:
    resuming = example.resume()
    try:
        example.start("--expires-in", "2", "--on-expiry", "deny")
        [done] = resuming.finished()
    finally:
        resuming.stop()
    assert done["verdicts"] == ["denied"] and "did not email Bob" in done["reply"]
    assert example.outbox() == []


def approve_with(who: Api, raised: dict[str, Any], arguments: dict[str, Any] | None = None) -> None:
    """`who` approves the run's one approval, editing the call's arguments when given."""
    body: dict[str, Any] = {"payload": {"approved": True}, **({"arguments": arguments} if arguments else {})}
    [interrupt_id] = raised["interrupts"]
    answered = who.req("POST", f"/v1/sessions/{raised['session_id']}/interrupts/{interrupt_id}/resume", body)
    assert answered.status_code == 200, answered.text


def test_edit_before_approve_the_tool_runs_with_the_edited_arguments(example: ExampleRun, stack: Any) -> None:
    """An approver's edit is what runs: the email goes to the edited recipient, once, and (where the
    venv can check receipts) the edited call's receipt verifies for the edited arguments."""
    checking = ("--check-receipts",) if example.checks_receipts() else ()
    resuming = example.resume(1, "--edit", *checking)
    try:
        raised = example.start("--approvers", "ann", "--edit")
        approve_with(approver(stack, "ann"), raised, {"to": "carol"})
        [done] = resuming.finished()
    finally:
        resuming.stop()
    assert done["verdicts"] == ["approved"] and "emailed Bob" in done["reply"]
    [sent] = example.outbox()
    assert sent.startswith("to=carol ")


class Captured:
    """The run's target held by the test: it takes the deliveries, so the test can alter one before
    handing it to the example's `resume --delivery FILE`."""

    def __init__(self, example: ExampleRun) -> None:
        self.taken: list[RunDelivery] = []
        self.server = Deliveries(self.taken.append).serve(os.environ[SECRET_ENV])
        Client(example.stack.base_url, example.stack.api_key).declare_agent(example.framework.agent_id, {
            "run_targets": {TARGET: {"url": f"http://127.0.0.1:{self.server.server_address[1]}/",
                                     "secret": f"env:{SECRET_ENV}"}}, "approval": {"edit": True}})

    def of(self, run_id: str) -> RunDelivery:
        found = wait_for(lambda: next((d for d in self.taken if d.run_id == run_id), None),
                         f"the delivery of {run_id}", 60)
        assert found is not None
        return found


def handed(example: ExampleRun, altered: RunDelivery, name: str) -> dict[str, Any]:
    path = example.workdir / f"{name}.json"
    path.write_text(altered.model_dump_json())
    return example.again(path, "--check-receipts")


def test_receipt_a_tampered_answer_is_refused_and_the_tool_does_not_run(example: ExampleRun, stack: Any) -> None:
    """With the key set, an answer whose arguments were changed after signing, or that carries the
    receipt of another call, is refused like a denial (the model is told why) and nothing is sent."""
    assert example.checks_receipts(), f"{example.framework.python} lacks the receipts extra (`make sdk-venvs`)"
    captured = Captured(example)
    try:
        ann = approver(stack, "ann")
        plain = example.start("--run", "run-plain", "--approvers", "ann", "--edit")
        edited = example.start("--run", "run-edited", "--approvers", "ann", "--edit")
        approve_with(ann, plain)
        approve_with(ann, edited, {"to": "carol"})
        genuine_plain, genuine_edited = captured.of("run-plain"), captured.of("run-edited")
    finally:
        captured.server.shutdown()
    [answer] = genuine_edited.answers
    assert answer.edit is not None
    changed = genuine_edited.model_copy(update={"delivery_id": "dlv_tampered_args", "answers": [
        answer.model_copy(update={"edit": {**answer.edit, "arguments": {"to": "mallory"}}})]})
    borrowed = genuine_plain.model_copy(update={"delivery_id": "dlv_borrowed_receipt", "answers": [
        genuine_plain.answers[0].model_copy(update={"receipt": answer.receipt})]})
    for altered in (changed, borrowed):
        done = handed(example, altered, altered.delivery_id)
        assert "did not email Bob" in done["reply"] and "receipt" in done["reply"], done
    assert example.outbox() == []
