"""Approval receipts: the claims of a decided interrupt, their ES256 JWS, and the SDK's offline check."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from holdpoint.core import receipts
from holdpoint.core.answers import Answer
from holdpoint.core.bound_action import BoundAction, canonical
from holdpoint.core.policy import Policy
from holdpoint.core.state import Interrupt
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt

ARGS = {"amount": 120, "to": "acct-7"}
ACTION = BoundAction.of("transfer", json.dumps(ARGS), {"name": "payments"})


class KeyPair:
    """A local P-256 key signing as KMS does (a DER signature, turned into r||s by `der_to_raw`)."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.private = ec.generate_private_key(ec.SECP256R1())

    def sign(self, message: bytes) -> bytes:
        return receipts.der_to_raw(self.private.sign(message, ec.ECDSA(hashes.SHA256())))

    def jwk(self) -> dict[str, object]:
        spki = self.private.public_key().public_bytes(serialization.Encoding.DER,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)
        return receipts.jwk(self.kid, spki)


def decided(status: str = "approved", action: BoundAction | None = ACTION) -> Interrupt:
    approvals = (Answer("alice", "client", "approved", at="2026-12-07T00:01:00Z", channel="api"),
                 Answer("bob", "client", status, at="2026-12-07T00:02:00Z", channel="slack"))  # type: ignore[arg-type]
    return Interrupt("int-1", "worker", "approve the transfer", None, "2026-12-07T00:00:00Z", "d",
                     status="resolved", action=action, policy=Policy(quorum=2, subjects=("alice", "bob")),
                     approvals=approvals)


def signed(key: KeyPair, interrupt: Interrupt | None = None) -> str:
    body = receipts.claims(interrupt or decided(), "acme", "sess-1", 1_800_000_000)
    return receipts.encode(body, key.kid, key.sign)


def test_receipt_claims_name_the_interrupt_action_verdict_approvers_and_policy() -> None:
    body = receipts.claims(decided(), "acme", "sess-1", 1_800_000_000)
    assert body["tenant"] == "acme" and body["session"] == "sess-1" and body["interrupt"] == "int-1"
    assert body["verdict"] == "approved" and body["expired"] is False and body["iat"] == 1_800_000_000
    assert body["action"] == {"tool": "transfer", "fingerprint": ACTION.fingerprint,
                              "agent_version": ACTION.agent_version,
                              "arguments_sha256": receipts.arguments_digest(ARGS)}
    assert [(a["subject"], a["at"]) for a in body["approvals"]] == [  # type: ignore[index, union-attr]
        ("alice", "2026-12-07T00:01:00Z"), ("bob", "2026-12-07T00:02:00Z")]
    policy = Policy(quorum=2, subjects=("alice", "bob"))
    assert body["policy_sha256"] == receipts.sha256_hex(canonical(policy.to_item()))


def test_receipt_of_a_plain_question_names_no_action_and_verifies_without_one() -> None:
    key = KeyPair("k1")
    token = signed(key, replace(decided(), action=None, policy=None))
    assert verify_receipt(token, None, {"keys": [key.jwk()]})["action"] is None
    with pytest.raises(ReceiptRefused, match="approves no action"):
        verify_receipt(token, {"tool": "transfer", "arguments": ARGS}, {"keys": [key.jwk()]})


def test_receipt_verifies_offline_for_the_same_arguments_as_a_value_or_as_text() -> None:
    key = KeyPair("k1")
    token = signed(key)
    jwks = {"keys": [KeyPair("retired").jwk(), key.jwk()]}
    assert verify_receipt(token, {"tool": "transfer", "arguments": ARGS}, jwks)["interrupt"] == "int-1"
    text = '{ "to": "acct-7", "amount": 120 }'  # the same arguments, other spacing and order
    assert verify_receipt(token, {"tool": "transfer", "arguments": text, "fingerprint": ACTION.fingerprint}, jwks)


def test_receipt_header_is_es256_with_the_kid_and_the_signature_is_raw_r_s() -> None:
    parsed = receipts.parse(signed(KeyPair("key-2026")))
    assert parsed.header == {"alg": "ES256", "typ": receipts.TYP, "kid": "key-2026"}
    assert len(parsed.signature) == 64


def test_receipt_refuses_a_denied_verdict_unless_any_verdict_is_asked() -> None:
    key = KeyPair("k1")
    token = signed(key, decided("denied"))
    with pytest.raises(ReceiptRefused, match="verdict is 'denied'"):
        verify_receipt(token, {"tool": "transfer", "arguments": ARGS}, {"keys": [key.jwk()]})
    assert verify_receipt(token, {"tool": "transfer", "arguments": ARGS}, {"keys": [key.jwk()]}, verdict=None)


def test_receipt_refuses_another_tool_and_an_unknown_kid() -> None:
    key = KeyPair("k1")
    token = signed(key)
    with pytest.raises(ReceiptRefused, match="tool"):
        verify_receipt(token, {"tool": "refund", "arguments": ARGS}, {"keys": [key.jwk()]})
    with pytest.raises(ReceiptRefused, match="no key 'k1'"):
        verify_receipt(token, {"tool": "transfer", "arguments": ARGS}, {"keys": []})


def test_receipt_der_to_raw_pads_short_integers_and_refuses_malformed_der() -> None:
    der = bytes([0x30, 6, 0x02, 1, 5, 0x02, 1, 7])
    assert receipts.der_to_raw(der) == (5).to_bytes(32, "big") + (7).to_bytes(32, "big")
    high = bytes([0x30, 0x46, 0x02, 0x21, 0x00]) + b"\xff" * 32 + bytes([0x02, 0x21, 0x00]) + b"\x80" * 32
    assert receipts.der_to_raw(high) == b"\xff" * 32 + b"\x80" * 32
    for bad in (b"", bytes([0x31, 0]), der + b"\x00", bytes([0x30, 3, 0x02, 1, 5])):
        with pytest.raises(receipts.ReceiptError):
            receipts.der_to_raw(bad)


def test_receipt_jwk_refuses_a_key_that_is_not_p256() -> None:
    other = ec.generate_private_key(ec.SECP384R1()).public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(receipts.ReceiptError):
        receipts.jwk("k", other)
