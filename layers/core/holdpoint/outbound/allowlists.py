"""The deployment's allow-lists of AWS resources a tenant may name (worker and run-target Lambdas,
tenant queues): comma-separated ARN patterns the template sets, matched against the resource's
ARN in this deployment's region. Empty admits none."""

from __future__ import annotations

import fnmatch
import os


def here() -> str | None:
    """This deployment's region."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")


def allowed(arn: str, allowlist: str) -> bool:
    """Whether an ARN matches a pattern of the comma-separated allow-list `allowlist` names (empty: none)."""
    patterns = [p.strip() for p in os.environ.get(allowlist, "").split(",") if p.strip()]
    return any(fnmatch.fnmatchcase(arn, p) for p in patterns)
