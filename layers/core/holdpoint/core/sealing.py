"""Tamper-evident tokens: a payload's strict JSON in unpadded base64url, a dot, and its
HMAC-SHA256 under its purpose's own subkey, HMAC(secret, "holdpoint/" + purpose), so a token made
for one purpose never verifies as another. Where the secret lives is the adapter's
(aws/signing.py: Secrets Manager; memory/sealer.py: a key of its own); it is read only once a
token is well formed enough to check."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping

from holdpoint.core import strictjson
from holdpoint.core.jsontypes import JsonObject

MAX_TOKEN_CHARS = 4_096
MAC_CHARS = 43
"""An HMAC-SHA256 (32 bytes) in unpadded base64url."""

Secret = Callable[[], str]
"""Reads the secret the subkeys derive from (raising when there is none)."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _subkey(secret: Secret, purpose: str) -> bytes:
    return hmac.new(secret().encode(), f"holdpoint/{purpose}".encode(), hashlib.sha256).digest()


def seal(secret: Secret, purpose: str, payload: Mapping[str, object]) -> str:
    """`payload` as an opaque string only a holder of the secret can have made."""
    body = b64(strictjson.dumps(payload).encode())
    mac = hmac.new(_subkey(secret, purpose), body.encode(), hashlib.sha256).digest()
    return f"{body}.{b64(mac)}"


def sealed_length(payload: Mapping[str, object]) -> int:
    """How long `seal(_, _, payload)` is, without the secret: the body, a dot and the 32-byte MAC."""
    return len(b64(strictjson.dumps(payload).encode())) + 1 + MAC_CHARS


def unseal(secret: Secret, purpose: str, token: str) -> JsonObject | None:
    """The payload of a token `seal(secret, purpose, ...)` made; None for anything else. The MAC
    is compared as the text `seal` writes, so no other spelling of it (padding, a last character
    whose spare bits differ, a character base64 would skip) opens the token."""
    if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        return None
    body, _, signature = token.partition(".")
    if len(signature) != MAC_CHARS:
        return None
    try:
        expected = b64(hmac.new(_subkey(secret, purpose), body.encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return None
        payload = json.loads(unb64(body))
    except (binascii.Error, ValueError):  # UnicodeError is a ValueError
        return None
    return payload if isinstance(payload, dict) else None
