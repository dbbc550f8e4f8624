"""Attacks on a framework integration's resume: an answer handed to it altered, or carrying a
receipt that is not its own. With the key set, the SDK's one rule (`runs.approved_arguments`,
which every integration asks before a call runs) refuses each, so the tool does not run. The same
attacks through each real framework: tests/e2e/test_framework_runs_e2e.py (`-k receipt`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from holdpoint.core.bound_action import BoundAction
from holdpoint_sdk.runs import NotApproved, RunAnswer, approved_arguments
from tests.unit.test_receipts import ARGS, KeyPair, decided, signed

KEY = KeyPair("k1")
JWKS = {"keys": [KEY.jwk()]}
EDITED = {**ARGS, "to": "acct-9"}


def answer(receipt: str | None, edit: dict[str, Any] | None = None, verdict: str = "approved") -> RunAnswer:
    return RunAnswer.model_validate({"interrupt_id": "int-1", "reason": "approval", "verdict": verdict,
                                     "receipt": receipt, "edit": edit})


def test_receipt_the_genuine_answer_runs_the_call_it_approved() -> None:
    assert approved_arguments(answer(signed(KEY)), "transfer", json.dumps(ARGS), JWKS) == json.dumps(ARGS)
    edited = signed(KEY, decided(action=BoundAction.of("transfer", json.dumps(EDITED), {"name": "payments"})))
    assert approved_arguments(answer(edited, {"arguments": EDITED}), "transfer", ARGS, JWKS) == EDITED


def test_receipt_attack_edit_arguments_changed_after_signing_are_refused() -> None:
    with pytest.raises(NotApproved, match="receipt does not prove this call.*other arguments"):
        approved_arguments(answer(signed(KEY), {"arguments": {**ARGS, "amount": 120_000}}), "transfer", ARGS, JWKS)


def test_receipt_attack_a_receipt_for_another_tool_is_refused() -> None:
    with pytest.raises(NotApproved, match="receipt approves tool 'transfer', not 'refund'"):
        approved_arguments(answer(signed(KEY)), "refund", ARGS, JWKS)


def test_receipt_attack_an_answer_stripped_of_its_receipt_is_refused() -> None:
    with pytest.raises(NotApproved, match="no receipt"):
        approved_arguments(answer(None), "transfer", ARGS, JWKS)


def test_receipt_attack_a_receipt_signed_by_another_key_is_refused() -> None:
    with pytest.raises(NotApproved, match="signature does not match"):
        approved_arguments(answer(signed(KeyPair("k1"))), "transfer", ARGS, JWKS)


def test_receipt_attack_an_approved_receipt_on_a_denial_does_not_turn_it_into_an_approval() -> None:
    with pytest.raises(NotApproved, match="not approved: denied"):
        approved_arguments(answer(signed(KEY), verdict="denied"), "transfer", ARGS, JWKS)


def test_edit_before_approve_without_a_key_set_the_edit_is_what_runs() -> None:
    assert approved_arguments(answer(None, {"arguments": EDITED}), "transfer", ARGS) == EDITED
    assert approved_arguments(answer(None), "transfer", ARGS) == ARGS
