"""The seed scenario for each agent framework, with its real package, on the local stack
(PROTOCOL.md §10, sdk/): the scripted agent wants `send_email`; its run ends and is raised in
Holdpoint (`start` exits: nothing runs while a person decides); a person answers (in the inbox
page in Chromium, or through the API); the answer reaches the run's target (the example's
receiver), the run resumes from the framework's own persistence, and the email is sent exactly
once. Also per framework: a denial (nothing sent, the model told why), the same delivery handed
over again (a repeat: nothing resumed), a quorum of two, and an expiry under `on_expiry: deny`.
Select one framework with its word: `pytest -k strands`, `-k langgraph`, `-k openai_agents`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_inbox_page import answer_on_its_card
from tests.frameworks import FRAMEWORKS, ExampleRun, Framework
from tests.stack import Api

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
