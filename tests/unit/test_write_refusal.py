"""R7, R17, A2: why an answer to an interrupt may not be written, the one pure rule
(`core.interrupts.refused`) both stores apply: the memory store before it writes, the DynamoDB
store to the item its failed condition returns. The stores' own contract
(tests/unit/test_store_contract.py) proves they answer alike; this proves the rule itself."""

from __future__ import annotations

from dataclasses import replace

import pytest

from holdpoint.core.interrupts import Checked, refused, write_refusal
from holdpoint.core.state import Interrupt

OPEN = Interrupt(interrupt_id="int_1", origin="worker", reason="confirm", anchor=None,
                 created_at="2024-01-01T00:00:00.000Z", dedup_key="dk", owner="alice", generation=2,
                 approvals=[{"subject": "a"}])
AS_READ = Checked(("worker", "client"), owner="alice", generation=2, seen=1)


def test_r7_an_answer_to_the_interrupt_as_read_may_be_written() -> None:
    assert write_refusal(OPEN, AS_READ) is None and refused(OPEN, AS_READ) is None
    assert refused(OPEN, Checked(("worker",))) is None  # nothing else checked: nothing else holds it back


def test_r7_a_missing_or_closed_interrupt_is_a_noop() -> None:
    assert refused(None, AS_READ) == ("noop", None)
    closed = replace(OPEN, status="resolved")
    assert refused(closed, AS_READ) == ("noop", closed)


def test_r17_another_owners_interrupt_is_not_found_and_not_shown() -> None:
    """The caller may not learn the interrupt exists: no record comes back with the refusal."""
    assert refused(OPEN, replace(AS_READ, owner="bob")) == ("not_found", None)
    assert refused(replace(OPEN, status="resolved"), replace(AS_READ, owner="bob")) == ("not_found", None)


@pytest.mark.parametrize(("checked", "why"), [
    (replace(AS_READ, generation=3), "changed"),  # raised again since it was read
    (replace(AS_READ, seen=0), "raced"),  # A2: another approver's answer landed first
    (replace(AS_READ, allowed_origins=("client",)), "forbidden"),  # R17: an origin the caller does not outrank
    (replace(AS_READ, allowed_origins=()), "forbidden"),
])
def test_a2_r17_a_refusal_names_what_changed_and_returns_the_interrupt_as_it_is(checked: Checked, why: str) -> None:
    assert refused(OPEN, checked) == (why, OPEN)


def test_r7_the_owner_is_checked_before_the_status_and_the_status_before_the_rest() -> None:
    """The order is the rule: a closed interrupt is a no-op even when it was raised again or answered."""
    closed = replace(OPEN, status="resolved", generation=9, approvals=[])
    assert write_refusal(closed, AS_READ) == "noop"
    assert write_refusal(replace(OPEN, generation=9, approvals=[]), AS_READ) == "changed"
