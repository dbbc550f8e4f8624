"""`ports.ReceiptKeys` in memory: a P-256 key of its own (a new one per twin, as each deployment's
KMS key is its own), signing as KMS does (DER, then r||s), and retired twins' keys published too."""

from __future__ import annotations

import secrets

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from holdpoint.core import receipts
from holdpoint.core.jsontypes import JsonObject, JsonValue


class MemoryReceiptKeys:
    def __init__(self, retired: tuple[MemoryReceiptKeys, ...] = ()) -> None:
        self._private = ec.generate_private_key(ec.SECP256R1())
        self._kid = "mem-" + secrets.token_hex(8)
        self.retired = retired

    @property
    def kid(self) -> str:
        return self._kid

    def sign(self, message: bytes) -> bytes:
        return receipts.der_to_raw(self._private.sign(message, ec.ECDSA(hashes.SHA256())))

    def public_jwk(self) -> JsonObject:
        spki = self._private.public_key().public_bytes(serialization.Encoding.DER,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo)
        return receipts.jwk(self._kid, spki)

    def jwks(self) -> JsonObject:
        keys: list[JsonValue] = [self.public_jwk(), *(r.public_jwk() for r in self.retired)]
        return {"keys": keys}
