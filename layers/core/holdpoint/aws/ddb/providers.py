"""The identity providers on the table (`ports.IdentityProviders`): a tenant's declaration, and the
item that gives an (issuer, client id) pair to exactly one tenant. A declaration is one
transaction, so the pair's owner and the tenant's declaration never disagree, and a pair another
tenant holds is refused by the write's condition, not by an earlier read."""

from __future__ import annotations

import json

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.commit import put
from holdpoint.aws.ddb.expr import Exists, Expr, Item, TransactOp, Write, eq, s
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import Cancelled
from holdpoint.core.identity import IdentityProvider
from holdpoint.ports import Conflict


def _provider(item: Item | None) -> IdentityProvider | None:
    return IdentityProvider.from_item(json.loads(item["body"]["S"])) if item else None


class ProviderItems:
    def __init__(self, db: Table) -> None:
        self.db = db

    def identity_provider(self, tenant: str) -> IdentityProvider | None:
        return _provider(self.db.get({"PK": s(k.tenant_idp_pk(tenant)), "SK": s(k.IDP_SK)}, consistent=False))

    def provider_for(self, issuer: str, client_id: str) -> tuple[str, IdentityProvider] | None:
        pk, sk = k.issuer_key(issuer, client_id)
        item = self.db.get({"PK": s(pk), "SK": s(sk)}, consistent=False)
        found = _provider(item)
        if item is None or found is None or (found.issuer, found.client_id) != (issuer, client_id):
            return None
        return item["tenant"]["S"], found

    def declare_identity_provider(self, tenant: str, provider: IdentityProvider) -> str | None:
        key = {"PK": s(k.tenant_idp_pk(tenant)), "SK": s(k.IDP_SK)}
        old_item = self.db.get(key)
        old = _provider(old_item)
        body = s(json.dumps(provider.to_item(), sort_keys=True))
        pk, sk = k.issuer_key(provider.issuer, provider.client_id)
        mine = eq("tenant", s(tenant))
        ops: list[TransactOp] = [
            put({**key, "body": body}, Exists("PK", present=False) if old_item is None
                 else eq("body", old_item["body"])),
            put({"PK": s(pk), "SK": s(sk), "tenant": s(tenant), "body": body}, Exists("PK", present=False) | mine),
        ]
        if old is not None and k.issuer_key(old.issuer, old.client_id) != (pk, sk):
            old_pk, old_sk = k.issuer_key(old.issuer, old.client_id)
            ops.append({"Delete": Expr().into(Write(Key={"PK": s(old_pk), "SK": s(old_sk)}), condition=mine)})
        try:
            self.db.transact(ops)
        except Cancelled as exc:
            holder = self.db.get({"PK": s(pk), "SK": s(sk)})
            if holder is not None and holder["tenant"]["S"] != tenant:
                return holder["tenant"]["S"]
            raise Conflict("the identity provider declaration changed meanwhile; declare it again") from exc
        return None

