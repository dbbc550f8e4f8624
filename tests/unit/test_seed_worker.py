"""The seed worker (examples/seed_worker.py) as a user runs it beside the README."""

from __future__ import annotations

from tests.harness import seed_decide

RESUMED = {"type": "interrupt.resumed", "interrupt_id": "int-review", "payload": {"approved": True}}
EMAIL = {"kind": "tool_call", "id": "call-1", "name": "send_email", "status": "pending", "attempt": 1}


def test_seed_worker_answers_its_own_interrupt_with_the_tool_result() -> None:
    assert seed_decide(RESUMED, None, [EMAIL]) == {"actions": [{"type": "tool.result", "result": "sent"}]}
    declined = {**RESUMED, "payload": {"approved": False}}
    assert seed_decide(declined, None, [EMAIL]) == {"actions": [{"type": "tool.error", "error": "declined"}]}
    assert seed_decide(RESUMED, None) == {"actions": [{"type": "tool.result", "result": "sent"}]}


def test_seed_worker_lets_an_interrupt_raised_through_the_api_go_on_as_proposed() -> None:
    """Issue 32: an interrupt raised with `POST .../interrupts` (no send_email call waits on it)
    was answered with a `tool.result` for no call, and the decision failed (`protocol_error`)."""
    assert seed_decide(RESUMED, None, []) == {"actions": []}
    proposed = {"messages": [], "actions": [{"type": "done"}]}
    assert seed_decide(RESUMED, proposed, []) == proposed
