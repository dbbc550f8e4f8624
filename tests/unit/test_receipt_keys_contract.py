"""The `ports.ReceiptKeys` contract, held by both: KMS on moto (aws/receipts.py, an ECC_NIST_P256
SIGN_VERIFY key) and the in-memory twin (memory/receipts.py). A receipt the current key signs
verifies against the key set, so does one a retired key signed, and one another deployment signed
does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from holdpoint.core import receipts
from holdpoint_local.memory.receipts import MemoryReceiptKeys
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt
from tests.unit.test_receipts import ARGS, decided

KINDS = ["memory", "kms"]
RUN = {"tool": "transfer", "arguments": ARGS}


@pytest.fixture(params=KINDS)
def make(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """A maker of receipt keys of one kind: `make()` a deployment's, `make(retired)` its next, with
    the one before retired."""
    if request.param == "memory":
        return lambda retired=None: MemoryReceiptKeys((retired,) if retired is not None else ())
    request.getfixturevalue("aws")
    from holdpoint.aws.receipts import KmsReceiptKeys

    kms = boto3.client("kms")

    def kms_keys(retired: Any = None) -> KmsReceiptKeys:
        key_id = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
        return KmsReceiptKeys(key_id, (retired.kid,) if retired is not None else ())

    return kms_keys


def _signed(keys: Any) -> str:
    return receipts.encode(receipts.claims(decided(), "acme", "sess-1", 1_800_000_000), keys.kid, keys.sign)


def test_receipt_keys_sign_a_receipt_the_key_set_verifies(make: Callable[..., Any]) -> None:
    keys = make()
    jwks = keys.jwks()
    assert [k["kid"] for k in jwks["keys"]] == [keys.kid]
    assert {k["kty"] for k in jwks["keys"]} == {"EC"} and {k["crv"] for k in jwks["keys"]} == {"P-256"}
    assert verify_receipt(_signed(keys), RUN, jwks)["verdict"] == "approved"


def test_receipt_keys_a_retired_keys_receipts_still_verify(make: Callable[..., Any]) -> None:
    old = make()
    token = _signed(old)
    new = make(old)
    assert [k["kid"] for k in new.jwks()["keys"]] == [new.kid, old.kid]
    assert verify_receipt(token, RUN, new.jwks())
    assert verify_receipt(_signed(new), RUN, new.jwks())


def test_receipt_keys_another_deployments_receipt_is_refused(make: Callable[..., Any]) -> None:
    ours, theirs = make(), make()
    with pytest.raises(ReceiptRefused, match="no key"):
        verify_receipt(_signed(theirs), RUN, ours.jwks())
