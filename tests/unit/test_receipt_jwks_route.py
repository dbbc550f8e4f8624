"""`GET /.well-known/jwks.json`: the receipt keys' public halves, served without credentials, verify
a receipt KMS signed (moto's KMS, the API function's resolver)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from holdpoint import assembly
from holdpoint.aws.receipts import KmsReceiptKeys
from holdpoint.core import receipts
from holdpoint_sdk.receipts import verify_receipt
from tests.unit.test_api import call_api
from tests.unit.test_receipts import ARGS, decided


@pytest.fixture
def keys(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """The current receipt key's id and a retired one's, as the template names them."""
    kms = boto3.client("kms")
    current, retired = (kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
                        for _ in range(2))
    monkeypatch.setenv("RECEIPT_KEY_ID", current)
    monkeypatch.setenv("RECEIPT_RETIRED_KEY_IDS", retired)
    assembly.reset()
    yield current, retired
    assembly.reset()


def test_receipt_jwks_route_serves_the_keys_that_verify_a_kms_signed_receipt(keys: tuple[str, str]) -> None:
    current, retired = keys
    status, body = call_api("GET", "/.well-known/jwks.json", tenant=None)
    assert status == 200 and [k["kid"] for k in body["keys"]] == [current, retired]
    assert all((k["kty"], k["crv"], k["alg"]) == ("EC", "P-256", "ES256") for k in body["keys"])
    for key_id in keys:
        signer = KmsReceiptKeys(key_id)
        token = receipts.encode(receipts.claims(decided(), "acme", "s1", 1_800_000_000), signer.kid, signer.sign)
        assert verify_receipt(token, {"tool": "transfer", "arguments": ARGS}, body)["interrupt"] == "int-1"


def test_receipt_jwks_route_leaves_out_a_key_kms_cannot_read(keys: tuple[str, str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    current, _ = keys
    monkeypatch.setenv("RECEIPT_RETIRED_KEY_IDS", "00000000-0000-0000-0000-000000000000")
    assembly.reset()
    status, body = call_api("GET", "/.well-known/jwks.json", tenant=None)
    assert status == 200 and [k["kid"] for k in body["keys"]] == [current]


def test_receipt_jwks_route_without_a_key_is_an_empty_set(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECEIPT_KEY_ID", raising=False)
    monkeypatch.delenv("RECEIPT_RETIRED_KEY_IDS", raising=False)
    assembly.reset()
    try:
        assert call_api("GET", "/.well-known/jwks.json", tenant=None) == (200, {"keys": []})
    finally:
        assembly.reset()
