"""Approval receipts' keys: the one that signs, and every public key a verifier may need."""

from __future__ import annotations

from typing import Protocol

from holdpoint.core.jsontypes import JsonObject


class ReceiptKeys(Protocol):
    """The deployment's receipt keys (KMS in AWS): `kid` names the current key, `sign` signs with
    it (the raw ES256 signature r||s of a JWS signing input), and `jwks` is the JWK Set of the
    current key and of the retired ones whose receipts still verify."""

    @property
    def kid(self) -> str: ...

    def sign(self, message: bytes) -> bytes: ...

    def jwks(self) -> JsonObject: ...
