"""Tamper-evident tokens under the deployment's own key (page cursors; client JWTs use the key too).

The key is the signing secret in Secrets Manager (`JWT_SECRET_ARN`), read once per container.
Each kind of sealed token signs with its own subkey, HMAC(secret, "holdpoint/" + purpose), so a
token made for one purpose never verifies as another.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from holdpoint.aws.errors import MissingKey
from holdpoint.aws.secretrefs import secret_value
from holdpoint.core import strictjson

MAX_TOKEN_CHARS = 4_096
MAC_CHARS = 43
"""An HMAC-SHA256 (32 bytes) in unpadded base64url."""


def platform_secret() -> str | None:
    """The deployment's signing secret, or None when none is configured."""
    arn = os.environ.get("JWT_SECRET_ARN")
    return secret_value(arn) if arn else None


def _subkey(purpose: str) -> bytes:
    secret = platform_secret()
    if not secret:
        raise MissingKey("JWT_SECRET_ARN is not set: nothing can be signed")
    return hmac.new(secret.encode(), f"holdpoint/{purpose}".encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal(purpose: str, payload: Mapping[str, object]) -> str:
    """`payload` as an opaque string that only this deployment can have made."""
    body = _b64(strictjson.dumps(payload).encode())
    mac = hmac.new(_subkey(purpose), body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(mac)}"


def sealed_length(payload: Mapping[str, object]) -> int:
    """How long `seal(_, payload)` is, without the key: the body, a dot and the 32-byte MAC."""
    return len(_b64(strictjson.dumps(payload).encode())) + 1 + MAC_CHARS


def unseal(purpose: str, token: str) -> dict[str, Any] | None:
    """The payload of a token `seal(purpose, ...)` made; None for anything else."""
    if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        return None
    body, _, signature = token.partition(".")
    try:
        given = _unb64(signature)
        expected = hmac.new(_subkey(purpose), body.encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(given, expected):
            return None
        payload = json.loads(_unb64(body))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return payload if isinstance(payload, dict) else None
