"""API keys in the table, by hash only: created and revoked by operators (the admin CLI)."""

from __future__ import annotations

from typing import Any

from holdpoint.aws.store import Store
from holdpoint.core.credentials import ORIGINS, hash_key


def put_api_key(table_name: str, key: str, tenant: str, subject: str, origin: str = "client",
                client: Any = None, groups: list[str] | None = None) -> None:
    """Store an API key by its hash only; the key itself is never written anywhere. `groups` are
    the approver groups its holder belongs to (A2)."""
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {ORIGINS}")
    Store(table_name, client).put_api_key(hash_key(key), tenant, subject, origin, groups)


def revoke_api_key(table_name: str, key: str, client: Any = None) -> bool:
    return Store(table_name, client).revoke_api_key(hash_key(key))
