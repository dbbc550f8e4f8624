"""The receipt key on the local stack, from template.yaml: moto's CloudFormation creates the
ECC_NIST_P256 SIGN_VERIFY key (fix 31), and the API function, calling KMS with its own role's
credentials (kms:GetPublicKey only), serves its public half without credentials; a receipt that
key signs verifies offline against what it served."""

from __future__ import annotations

from typing import Any

import requests

from holdpoint.core import receipts
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.unit.test_receipts import ARGS, KeyPair, decided

RUN = {"tool": "transfer", "arguments": ARGS}


def test_receipt_jwks_served_by_the_local_stack_verifies_what_its_kms_key_signs(stack: Any) -> None:
    r = requests.get(f"{stack.base_url}/.well-known/jwks.json", timeout=30)
    assert r.status_code == 200, r.text
    jwks = r.json()
    assert len(jwks["keys"]) == 1 and jwks["keys"][0]["crv"] == "P-256"
    kid = jwks["keys"][0]["kid"]
    kms = stack.client("kms")
    meta = kms.describe_key(KeyId=kid)["KeyMetadata"]
    assert (meta["KeySpec"], meta["KeyUsage"]) == ("ECC_NIST_P256", "SIGN_VERIFY")

    def sign(message: bytes) -> bytes:
        out = kms.sign(KeyId=kid, Message=message, MessageType="RAW", SigningAlgorithm="ECDSA_SHA_256")
        return receipts.der_to_raw(out["Signature"])

    body = receipts.claims(decided(), "acme", "s1", 1_800_000_000)
    assert verify_receipt(receipts.encode(body, kid, sign), RUN, jwks)["verdict"] == "approved"
    try:
        verify_receipt(receipts.encode(body, kid, KeyPair(kid).sign), RUN, jwks)
    except ReceiptRefused:
        pass
    else:
        raise AssertionError("a receipt another key signed under the stack's kid verified")
