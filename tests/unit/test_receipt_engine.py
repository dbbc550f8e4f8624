"""A closed interrupt gets its approval receipt once, as its wake commits, and `interrupt.resumed`
carries it to the worker, which checks it offline against the call it is about to run."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.services import inbox
from holdpoint_local.memory.receipts import MemoryReceiptKeys
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.harness import Harness

pytestmark = pytest.mark.usefixtures("memory")


def asking(log: list[dict[str, Any]]) -> Any:
    """A worker that asks before every tool and records the `interrupt.resumed` it is sent."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        t = req["trigger"]
        if t["type"] == "tool.execute":
            return {"actions": [{"type": "interrupt", "interrupt_id": "int-ok", "reason": "approve"}]}
        if t["type"] == "interrupt.resumed":
            log.append(t)
            return {"actions": [{"type": "tool.result", "result": "sent"}]}
        return req["proposed"]

    return decide


def test_receipt_is_signed_once_as_the_wake_commits_and_travels_with_interrupt_resumed() -> None:
    seen: list[dict[str, Any]] = []
    h = Harness(asking(seen))
    keys = MemoryReceiptKeys()
    h.runner.receipts = keys
    h.say("Email Bob")
    h.resume("int-ok", {"approved": True})
    [resumed] = seen
    interrupt = h.state().interrupts["int-ok"]
    assert interrupt.action is not None and resumed["receipt"] == interrupt.receipt
    run = {"tool": interrupt.action.tool, "arguments": interrupt.action.arguments}
    claims = verify_receipt(resumed["receipt"], run, keys.jwks())
    assert (claims["interrupt"], claims["session"], claims["tenant"]) == ("int-ok", h.session_id, "t1")
    assert claims["action"]["fingerprint"] == interrupt.action.fingerprint  # type: ignore[index]
    assert [a["subject"] for a in claims["approvals"]] == ["user-1"]  # type: ignore[union-attr]
    with pytest.raises(ReceiptRefused, match="other arguments"):
        verify_receipt(resumed["receipt"], {**run, "arguments": {"to": "mallory"}}, keys.jwks())
    assert inbox.closed_fields(interrupt)["receipt"] == interrupt.receipt  # the audit view's, and its export's


def test_receipt_is_not_made_without_receipt_keys() -> None:
    seen: list[dict[str, Any]] = []
    h = Harness(asking(seen))
    h.say("Email Bob")
    h.resume("int-ok", {"approved": True})
    [resumed] = seen
    assert "receipt" not in resumed and h.state().interrupts["int-ok"].receipt is None
    assert "receipt" not in inbox.closed_fields(h.state().interrupts["int-ok"])


def test_receipt_a_key_kms_refuses_leaves_no_receipt_and_the_session_resumes() -> None:
    seen: list[dict[str, Any]] = []
    h = Harness(asking(seen))
    keys = MemoryReceiptKeys()

    def refused(message: bytes) -> bytes:
        raise RuntimeError("the key is disabled")

    keys.sign = refused  # type: ignore[method-assign]
    h.runner.receipts = keys
    h.say("Email Bob")
    h.resume("int-ok", {"approved": True})
    [resumed] = seen
    assert "receipt" not in resumed and resumed["verdict"] == "approved"
