"""`ports.Sealer` in memory: the deployment's token format (`core.sealing`, as aws/signing.py
seals) under a secret of its own, a new random one unless one is given, so a token sealed by one
twin never opens in another, as one deployment's never opens in another's."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from holdpoint.core import sealing


class MemorySealer:
    def __init__(self, secret: str | None = None) -> None:
        self.secret = secret or secrets.token_urlsafe(32)

    def _secret(self) -> str:
        return self.secret

    def seal(self, purpose: str, payload: Mapping[str, object]) -> str:
        return sealing.seal(self._secret, purpose, payload)

    def unseal(self, purpose: str, token: str) -> dict[str, Any] | None:
        return sealing.unseal(self._secret, purpose, token)
