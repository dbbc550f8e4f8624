"""Declaring a tenant's identity provider: the people it signs in answer as approvers of the
operator origin, so only an operator key may name it, and an (issuer, client id) pair another
tenant declared is refused, never shared (`core/identity.py`)."""

from __future__ import annotations

from holdpoint.core.errors import Refusal
from holdpoint.core.identity import IdentityProvider
from holdpoint.ports import IdentityProviders
from holdpoint.services.caller import Caller


def _operator(caller: Caller, what: str) -> None:
    caller.require_key(what)
    if caller.origin != "operator":
        raise Refusal("forbidden", f"only operator keys {what}, not a {caller.origin} key")


def declare(store: IdentityProviders, caller: Caller, provider: IdentityProvider) -> IdentityProvider:
    """Make `provider` the caller's tenant's, replacing the one it had."""
    _operator(caller, "declare the identity provider")
    if store.declare_identity_provider(caller.tenant, provider) is not None:
        raise Refusal("conflict", "another tenant declared this issuer with this client id; each pair "
                      "belongs to one tenant: give this tenant an app client of its own", "client_id")
    return provider


def declared(store: IdentityProviders, caller: Caller) -> IdentityProvider:
    """The caller's tenant's provider (404 when it declared none)."""
    _operator(caller, "read the identity provider")
    provider = store.identity_provider(caller.tenant)
    if provider is None:
        raise Refusal("not_found", "this tenant declared no identity provider")
    return provider
