"""Credentials as the rules see them: the origins and their ranks' names, API keys as hashes."""

from __future__ import annotations

import hashlib

ORIGINS = ("worker", "client", "machine", "operator", "system")
JWT_AUDIENCE = "holdpoint"


def hash_key(key: str) -> str:
    """API keys are stored and looked up only as their SHA-256."""
    return hashlib.sha256(key.encode()).hexdigest()
