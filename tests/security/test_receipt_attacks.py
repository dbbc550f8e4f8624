"""Attacks on approval receipts: each is refused by the SDK's offline `verify_receipt`."""

from __future__ import annotations

import json

import pytest

from holdpoint.core import receipts
from holdpoint.core.bound_action import canonical
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.unit.test_receipts import ARGS, KeyPair, decided, signed

RUN = {"tool": "transfer", "arguments": ARGS}


def _reencode(token: str, header: dict[str, object] | None = None, claims: dict[str, object] | None = None,
              signature: str | None = None) -> str:
    parsed = receipts.parse(token)
    parts = token.split(".")
    return ".".join((receipts.b64url(canonical(header).encode()) if header is not None else parts[0],
                     receipts.b64url(canonical(claims).encode()) if claims is not None else parts[1],
                     signature if signature is not None else receipts.b64url(parsed.signature)))


def test_receipt_attack_arguments_digest_for_other_arguments_is_refused() -> None:
    key = KeyPair("k1")
    token = signed(key)
    with pytest.raises(ReceiptRefused, match="other arguments"):
        verify_receipt(token, {"tool": "transfer", "arguments": {**ARGS, "amount": 120_000}}, {"keys": [key.jwk()]})
    with pytest.raises(ReceiptRefused, match="other arguments"):
        verify_receipt(token, {"tool": "transfer", "arguments": "not json"}, {"keys": [key.jwk()]})
    assert verify_receipt(token, {"tool": "transfer", "arguments": json.dumps(ARGS) + " "}, {"keys": [key.jwk()]})


def test_receipt_attack_resigned_by_a_foreign_key_under_the_deployments_kid_is_refused() -> None:
    ours, theirs = KeyPair("k1"), KeyPair("k1")  # the attacker reuses the published kid
    with pytest.raises(ReceiptRefused, match="signature does not match"):
        verify_receipt(signed(theirs), RUN, {"keys": [ours.jwk()]})


def test_receipt_attack_foreign_key_under_its_own_kid_is_refused() -> None:
    with pytest.raises(ReceiptRefused, match="no key"):
        verify_receipt(signed(KeyPair("attacker")), RUN, {"keys": [KeyPair("k1").jwk()]})


@pytest.mark.parametrize("alg", ["none", "None", "HS256", "ES384", None])
def test_receipt_attack_alg_none_or_another_alg_is_refused(alg: str | None) -> None:
    key = KeyPair("k1")
    token = signed(key)
    body = receipts.parse(token).claims
    forged = _reencode(token, header={"alg": alg, "typ": receipts.TYP, "kid": "k1"}, claims=body)
    for candidate in (forged, forged.rsplit(".", 1)[0] + "."):
        with pytest.raises(ReceiptRefused):
            verify_receipt(candidate, RUN, {"keys": [key.jwk()]})


def test_receipt_attack_tampered_verdict_is_refused() -> None:
    key = KeyPair("k1")
    token = signed(key, decided("denied"))
    body = dict(receipts.parse(token).claims, verdict="approved")
    with pytest.raises(ReceiptRefused, match="signature does not match"):
        verify_receipt(_reencode(token, claims=body), RUN, {"keys": [key.jwk()]})


def test_receipt_attack_tampered_signature_and_malformed_tokens_are_refused() -> None:
    key = KeyPair("k1")
    token = signed(key)
    flipped = bytearray(receipts.parse(token).signature)
    flipped[5] ^= 1
    for bad in (_reencode(token, signature=receipts.b64url(bytes(flipped))), token + ".x", token.replace(".", "", 1),
                "", "a.b.c", 7, "x" * (receipts.MAX_RECEIPT + 1),
                _reencode(token, header={"alg": "ES256", "typ": receipts.TYP, "kid": "k1", "jku": "https://evil"})):
        with pytest.raises(ReceiptRefused):
            verify_receipt(bad, RUN, {"keys": [key.jwk()]})  # type: ignore[arg-type]


def test_receipt_attack_a_key_set_entry_that_is_not_p256_is_refused() -> None:
    key = KeyPair("k1")
    with pytest.raises(ReceiptRefused):
        verify_receipt(signed(key), RUN, {"keys": [dict(key.jwk(), crv="P-384")]})
    with pytest.raises(ReceiptRefused):
        verify_receipt(signed(key), RUN, {"keys": [dict(key.jwk(), x="AAAA")]})
