"""Secret references in agent configs (`worker.secret`, `llm.api_key`): checked and resolved here.

A tenant names the secret the engine signs its worker requests with (or sends to its model
endpoint), so an unchecked reference hands the tenant the platform's own secrets: the JWT
signing key in Secrets Manager, the Lambda's AWS credentials in its environment. Hence:

- `env:NAME` only when NAME matches a pattern the allow-list `HOLDPOINT_SECRET_ENV_ALLOWLIST`
  gives the caller's tenant, and no other tenant's, and never `AWS_*`. The list is comma-separated
  `TENANT=PATTERN` entries (fnmatch patterns; empty, the cloud default, allows none); an entry
  without a tenant admits nothing, so one tenant can never name the variable that holds another's
  worker secret and have requests signed that the other's worker trusts;
- `secretsmanager:X` only when X, a name or an ARN of this account and region, names a secret
  under the tenant's own prefix `{HOLDPOINT_TENANT_SECRET_PREFIX}{tenant}/`;
- a literal secret is refused (it would be stored, and shown, with the agent).

The same check runs when an agent is declared and when a secret is resolved, with the tenant of
the session being served.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import MutableMapping

from holdpoint.aws import clients
from holdpoint.aws.errors import SecretRefError

ENV_ALLOWLIST = "HOLDPOINT_SECRET_ENV_ALLOWLIST"
TENANT_PREFIX = "HOLDPOINT_TENANT_SECRET_PREFIX"
DEFAULT_TENANT_PREFIX = "holdpoint/tenants/"

_NEVER_ENV = ("AWS_*",)
"""The Lambda's own credentials are never a tenant's secret, whatever the allow-list says."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):([0-9]{12}):secret:(.+)$")
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$")

_CACHE: MutableMapping[str, str] = {}
"""Resolved values, one Secrets Manager read per reference per container (checked before every use)."""


def _patterns(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def env_entries(value: str | None) -> list[tuple[str, str]]:
    """The allow-list's `TENANT=PATTERN` entries; an entry naming no tenant is no entry."""
    out = []
    for entry in _patterns(value):
        owner, sep, pattern = entry.partition("=")
        if sep and owner.strip() and pattern.strip():
            out.append((owner.strip(), pattern.strip()))
    return out


def _env_problem(name: str, tenant: str, field: str) -> str | None:
    """An environment variable is the tenant's when the tenant's patterns, and only its, match it:
    a name two tenants' patterns match belongs to neither."""
    if not _ENV_NAME.match(name):
        return f"{field} names an invalid environment variable"
    if any(fnmatch.fnmatchcase(name, p) for p in _NEVER_ENV):
        return f"{field} may not name {name}"
    owners = {owner for owner, pattern in env_entries(os.environ.get(ENV_ALLOWLIST))
              if fnmatch.fnmatchcase(name, pattern)}
    if owners != {tenant}:
        return f"{field} names an environment variable outside {ENV_ALLOWLIST} for tenant {tenant}"
    return None


def tenant_prefix(tenant: str) -> str:
    """The Secrets Manager name prefix a tenant's references must stay under."""
    return f"{os.environ.get(TENANT_PREFIX) or DEFAULT_TENANT_PREFIX}{tenant}/"


def check(ref: object, tenant: str | None, field: str) -> str | None:
    """Why `ref` may not be used by `tenant` as `field` (a message naming the field), or None."""
    if not isinstance(ref, str) or not ref.startswith(("env:", "secretsmanager:")):
        return f"{field} must be `env:NAME` or `secretsmanager:NAME`, never the secret itself"
    if not tenant or not _TENANT.match(tenant):
        return f"{field}: no tenant to scope the secret to"
    if ref.startswith("env:"):
        return _env_problem(ref[len("env:"):], tenant, field)
    secret_id = ref[len("secretsmanager:"):]
    match = _SECRET_ARN.match(secret_id)
    if match:
        region, account, name = match.groups()
        here = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region != here or account != os.environ.get("HOLDPOINT_ACCOUNT_ID"):
            return f"{field} names a secret of another account or region"
    else:
        name = secret_id
    prefix = tenant_prefix(tenant)
    if not _SECRET_NAME.match(name) or not name.startswith(prefix) or len(name) == len(prefix):
        return f"{field} must name a secret under {prefix}"
    return None


def env_set(name: str) -> bool:
    """Whether an `env:` reference's variable is set in this function's environment."""
    return os.environ.get(name) is not None


def resolve(ref: str | None, tenant: str | None, field: str) -> str | None:
    """The secret's value (None when there is no reference). Raises `SecretRefError` for a refused
    or unset reference; a Secrets Manager failure propagates (botocore), worth another try."""
    if not ref:
        return None
    why = check(ref, tenant, field)
    if why:
        raise SecretRefError(why)
    if ref.startswith("env:"):
        value = os.environ.get(ref[len("env:"):])
    else:
        value = secret_value(ref[len("secretsmanager:"):])
    if value is None:
        raise SecretRefError(f"{field} {ref} is not set")
    return value


def secret_value(secret_id: str) -> str:
    """A Secrets Manager secret's string, read once per container: the one read and cache of
    secret values, for tenant references and the deployment's own signing key alike."""
    if secret_id not in _CACHE:
        _CACHE[secret_id] = clients.client("secretsmanager").get_secret_value(SecretId=secret_id)["SecretString"]
    return _CACHE[secret_id]
