"""The `ports.IdentityProviders` contract, held by the table (aws/ddb/providers.py, on moto) and
its in-memory twin: a tenant declares one provider, an (issuer, client id) pair finds exactly the
tenant that declared it, another tenant cannot take the pair, and replacing a declaration frees
the pair it had."""

from __future__ import annotations

from dataclasses import replace

import pytest

from holdpoint.aws.store import Store
from holdpoint.core.identity import IdentityProvider, cognito_issuer
from holdpoint.ports import IdentityProviders
from holdpoint_local.memory.store import MemoryStore
from tests.twins import side

POOL = "eu-west-1_AbC123"
A = IdentityProvider("cognito", cognito_issuer(POOL), "client-a", "sub", "cognito:groups", POOL,
                     admit_groups=("approvers", "finance"))
B = IdentityProvider("cognito", cognito_issuer(POOL), "client-b", "sub", "cognito:groups", POOL,
                     admit_subjects=("u-1",))
OIDC = IdentityProvider("oidc", "https://idp.example.com", "client-a", "email", "groups",
                        "https://idp.example.com/.well-known/openid-configuration", admit_groups=("ops",),
                        admit_subjects=("ann@example.com",))


@pytest.fixture(params=["memory", "aws"])
def store(request: pytest.FixtureRequest) -> IdentityProviders:
    return side(request, MemoryStore, lambda: Store(cache=False))


def test_oidc_contract_a_pair_finds_the_tenant_that_declared_it(store: IdentityProviders) -> None:
    assert store.provider_for(A.issuer, A.client_id) is None and store.identity_provider("acme") is None
    assert store.declare_identity_provider("acme", A) is None
    assert store.identity_provider("acme") == A
    assert store.provider_for(A.issuer, A.client_id) == ("acme", A)
    assert store.provider_for(A.issuer, "client-b") is None
    assert store.provider_for("https://idp.example.com", A.client_id) is None
    assert store.declare_identity_provider("acme", A) is None  # declaring it again changes nothing
    assert store.provider_for(A.issuer, A.client_id) == ("acme", A)


def test_oidc_contract_one_tenant_per_issuer_and_client(store: IdentityProviders) -> None:
    assert store.declare_identity_provider("acme", A) is None
    assert store.declare_identity_provider("globex", A) == "acme"
    assert store.identity_provider("globex") is None and store.provider_for(A.issuer, A.client_id) == ("acme", A)
    # The same issuer with another client id is another pair: another tenant may have it.
    assert store.declare_identity_provider("globex", B) is None
    assert store.provider_for(B.issuer, B.client_id) == ("globex", B)


def test_oidc_contract_replacing_a_declaration_frees_its_pair(store: IdentityProviders) -> None:
    assert store.declare_identity_provider("acme", A) is None
    assert store.declare_identity_provider("acme", OIDC) is None
    assert store.identity_provider("acme") == OIDC
    assert store.provider_for(A.issuer, A.client_id) is None
    assert store.provider_for(OIDC.issuer, OIDC.client_id) == ("acme", OIDC)
    assert store.declare_identity_provider("globex", A) is None
    assert store.provider_for(A.issuer, A.client_id) == ("globex", A)


def test_oidc_contract_the_admission_is_read_as_declared(store: IdentityProviders) -> None:
    """Both reads, by tenant and by (issuer, client id), give the admission last declared: the
    authorizer reads the second."""
    assert store.declare_identity_provider("acme", A) is None
    narrower = replace(A, admit_groups=(), admit_subjects=("u-1", "u-2"))
    assert store.declare_identity_provider("acme", narrower) is None
    for found in (store.identity_provider("acme"), (store.provider_for(A.issuer, A.client_id) or ("", None))[1]):
        assert found is not None and (found.admit_groups, found.admit_subjects) == ((), ("u-1", "u-2"))
