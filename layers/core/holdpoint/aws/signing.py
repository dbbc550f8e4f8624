"""Tamper-evident tokens under the deployment's own key (page cursors; client JWTs use the key too):
`ports.Sealer` as this module's `seal` and `unseal`, the token format `core.sealing`'s.

The key is the signing secret in Secrets Manager (`JWT_SECRET_ARN`), read once per container.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from holdpoint.aws.errors import MissingKey
from holdpoint.aws.secretrefs import secret_value
from holdpoint.core import sealing
from holdpoint.core.sealing import sealed_length

__all__ = ["platform_secret", "seal", "sealed_length", "unseal"]


def platform_secret() -> str | None:
    """The deployment's signing secret, or None when none is configured."""
    arn = os.environ.get("JWT_SECRET_ARN")
    return secret_value(arn) if arn else None


def _secret() -> str:
    secret = platform_secret()
    if not secret:
        raise MissingKey("JWT_SECRET_ARN is not set: nothing can be signed")
    return secret


def seal(purpose: str, payload: Mapping[str, object]) -> str:
    """`payload` as an opaque string that only this deployment can have made."""
    return sealing.seal(_secret, purpose, payload)


def unseal(purpose: str, token: str) -> dict[str, Any] | None:
    """The payload of a token `seal(purpose, ...)` made; None for anything else."""
    return sealing.unseal(_secret, purpose, token)
