"""`ports.ReceiptKeys` in AWS KMS: an ECC_NIST_P256 SIGN_VERIFY key signs approval receipts.

`RECEIPT_KEY_ID` names the current key (the template's `ReceiptKey`), and `RECEIPT_RETIRED_KEY_IDS`
(comma-separated) the retired ones whose public keys stay published so that their receipts still
verify. A key's `kid` is its KMS key id. `Sign` returns a DER ECDSA signature, which a JWS carries
as r||s (`receipts.der_to_raw`); the public keys are read once per container.
"""

from __future__ import annotations

import os
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.errors import MissingKey, Refused
from holdpoint.core import receipts
from holdpoint.core.jsontypes import JsonObject, JsonValue

_PUBLIC: dict[str, JsonObject] = {}
"""Each key's JWK, read from KMS once per container (a public key never changes)."""


class KmsReceiptKeys:
    def __init__(self, key_id: str | None = None, retired: tuple[str, ...] | None = None, client: Any = None) -> None:
        self._key_id = key_id if key_id is not None else os.environ.get("RECEIPT_KEY_ID", "")
        named = os.environ.get("RECEIPT_RETIRED_KEY_IDS", "") if retired is None else ",".join(retired)
        self.retired = tuple(k.strip() for k in named.split(",") if k.strip())
        self._client = client

    def _kms(self) -> Any:
        if self._client is None:
            self._client = clients.client("kms")
        return self._client

    @property
    def kid(self) -> str:
        if not self._key_id:
            raise MissingKey("RECEIPT_KEY_ID is not set: no receipt can be signed")
        return kid_of(self._key_id)

    def sign(self, message: bytes) -> bytes:
        out = self._kms().sign(KeyId=self.kid, Message=message, MessageType="RAW",
                               SigningAlgorithm="ECDSA_SHA_256")
        return receipts.der_to_raw(out["Signature"])

    def jwks(self) -> JsonObject:
        """The current key's JWK and the retired ones'. A key KMS refuses to read (deleted, not a
        P-256 signing key) is left out: its receipts no longer verify. Throttling and KMS being
        unavailable raise (`ports.Throttled`, `ports.Unavailable`): the request's 503."""
        keys: list[JsonValue] = []
        for key_id in dict.fromkeys(k for k in (self._key_id, *self.retired) if k):
            public = self._public(key_id)
            if public is not None:
                keys.append(public)
        return {"keys": keys}

    def _public(self, key_id: str) -> JsonObject | None:
        if key_id not in _PUBLIC:
            try:
                out = self._kms().get_public_key(KeyId=key_id)
                _PUBLIC[key_id] = receipts.jwk(kid_of(key_id), out["PublicKey"])
            except (Refused, receipts.ReceiptError):
                return None
        return _PUBLIC[key_id]


def kid_of(key_id: str) -> str:
    """A key's `kid`: its KMS key id, also when it is named by its ARN."""
    return key_id.rsplit("/", 1)[-1]
