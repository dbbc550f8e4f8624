"""Operator commands: create and revoke API keys, mint client tokens, declare the identity provider.

    python -m holdpoint.admin create-key --table T --tenant acme --subject ops --origin operator [--groups a,b]
    python -m holdpoint.admin revoke-key --table T --key hp_...
    python -m holdpoint.admin mint-token --tenant acme --subject user-1 [--ttl 900] [--session ses_...] [--groups a,b]
    python -m holdpoint.admin set-identity-provider --table T --tenant acme --client-id C
        (--cognito-pool eu-west-1_AbC123 [--cognito-domain https://acme.auth.eu-west-1.amazoncognito.com]
         | --discovery-url https://idp.example.com/.well-known/openid-configuration
           [--authorization-endpoint URL --token-endpoint URL])
        (--admit-group G | --admit-subject S)... [--subject-claim sub] [--groups-claim cognito:groups]

`set-identity-provider` declares the tenant's OIDC issuer as `PUT /v1/identity-provider` does
(docs/PROTOCOL.md, "Identity provider"); `--admit-group` and `--admit-subject` (each repeatable,
at least one of them) say who of its people signs in at all. `--groups` are the approver groups
(PROTOCOL.md §3, A2) the key's or the token's holder is in.

Keys are printed once and stored only as their SHA-256; the JWT secret is read from
Secrets Manager (`JWT_SECRET_ARN`), never passed on the command line.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from typing import Any

from holdpoint.aws.keys import put_api_key, revoke_api_key
from holdpoint.aws.signing import platform_secret
from holdpoint.aws.store import Store
from holdpoint.core.credentials import ORIGINS
from holdpoint.core.errors import Refusal
from holdpoint.http.bodies import IdentityProviderDeclaration
from holdpoint.services.tokens import mint_client_token


def create_key(table: str, tenant: str, subject: str, origin: str = "client", client: Any = None,
               groups: list[str] | None = None) -> str:
    """A new API key, stored by its hash only: the key itself is returned once, to be shown."""
    key = "hp_" + secrets.token_urlsafe(32)
    put_api_key(table, key, tenant, subject, origin, client, groups=groups)
    return key


def set_identity_provider(table: str, tenant: str, declaration: dict[str, Any], client: Any = None) -> str | None:
    """Declare the tenant's identity provider; None when done, else why not (one line)."""
    try:
        provider = IdentityProviderDeclaration.model_validate(declaration).checked_provider()
    except ValueError as exc:  # pydantic's ValidationError is one
        return str(exc)
    except Refusal as exc:
        return f"{exc.param}: {exc.message}"
    holder = Store(table, client, cache=False).declare_identity_provider(tenant, provider)
    return None if holder is None else f"tenant {holder} declared this issuer with this client id"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m holdpoint.admin")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create-key")
    create.add_argument("--table", default=os.environ.get("TABLE_NAME"))
    create.add_argument("--tenant", required=True)
    create.add_argument("--subject", required=True)
    create.add_argument("--origin", choices=ORIGINS, default="client")
    create.add_argument("--groups", type=_groups, default=[])
    revoke = sub.add_parser("revoke-key")
    revoke.add_argument("--table", default=os.environ.get("TABLE_NAME"))
    revoke.add_argument("--key", required=True)
    token = sub.add_parser("mint-token")
    token.add_argument("--tenant", required=True)
    token.add_argument("--subject", required=True)
    token.add_argument("--ttl", type=int, default=900)
    token.add_argument("--session")
    token.add_argument("--groups", type=_groups, default=[])
    idp = sub.add_parser("set-identity-provider")
    idp.add_argument("--table", default=os.environ.get("TABLE_NAME"))
    idp.add_argument("--tenant", required=True)
    idp.add_argument("--client-id", required=True)
    issuer = idp.add_mutually_exclusive_group(required=True)
    issuer.add_argument("--cognito-pool")
    issuer.add_argument("--discovery-url")
    idp.add_argument("--cognito-domain")
    for option in ("--subject-claim", "--groups-claim", "--authorization-endpoint", "--token-endpoint"):
        idp.add_argument(option)
    idp.add_argument("--admit-group", action="append", default=[], dest="admit_groups")
    idp.add_argument("--admit-subject", action="append", default=[], dest="admit_subjects")
    args = parser.parse_args(argv)
    if args.command == "set-identity-provider":
        return _declare(args)
    if args.command == "create-key":
        print(create_key(args.table, args.tenant, args.subject, args.origin, groups=args.groups))
    elif args.command == "revoke-key":
        if not revoke_api_key(args.table, args.key):
            print("no such key", file=sys.stderr)
            return 1
        print("revoked")
    else:
        secret = platform_secret()
        if not secret:
            print("JWT_SECRET_ARN is not set", file=sys.stderr)
            return 2
        print(mint_client_token(secret, args.tenant, args.subject, ttl_secs=args.ttl, session_id=args.session,
                                groups=args.groups))
    return 0


def _declare(args: argparse.Namespace) -> int:
    declaration: dict[str, Any] = {"client_id": args.client_id,
                                   "admit": {"groups": args.admit_groups, "subjects": args.admit_subjects}}
    if args.cognito_pool:
        pool = {"user_pool_id": args.cognito_pool}
        declaration["cognito"] = {**pool, "domain": args.cognito_domain} if args.cognito_domain else pool
    else:
        declaration["discovery_url"] = args.discovery_url
    for field in ("subject_claim", "groups_claim", "authorization_endpoint", "token_endpoint"):
        if getattr(args, field):
            declaration[field] = getattr(args, field)
    why = set_identity_provider(args.table, args.tenant, declaration)
    print(why or "declared", file=sys.stderr if why else sys.stdout)
    return 1 if why else 0


def _groups(text: str) -> list[str]:
    """`--groups a,b`: comma-separated group names."""
    return [g.strip() for g in text.split(",") if g.strip()]


if __name__ == "__main__":
    raise SystemExit(main())
