"""The logger, metrics and trace hop every HTTP route shares (Powertools; the handlers flush them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from holdpoint import tracing

logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer's modules log as its children
metrics = Metrics(namespace="Holdpoint")


def count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


READS = frozenset({"GET", "HEAD", "OPTIONS"})


def traced(name: str, event: dict[str, Any], answer: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """One request that may change something as a hop, annotated with the caller's tenant and the
    session it names (in its path, or in the answer of the request that created it). A read
    (GET, HEAD) is no step of a session: it stays in its own invocation's trace alone."""
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method") or "POST")
    if method in READS:
        return answer()
    lam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda") or {}
    session_id = (event.get("pathParameters") or {}).get("session_id")
    with tracing.hop(name, tenant=lam.get("tenant"), session_id=session_id) as current:
        out = answer()
        if current is not None and session_id is None:
            tracing.annotate(current, session_id=session_of(out))
        return out


def session_of(answer: dict[str, Any]) -> str | None:
    """The session a JSON answer names (`POST /v1/sessions` answers the one it created)."""
    body = answer.get("body")
    if not isinstance(body, str) or '"session_id"' not in body:
        return None
    try:
        value = json.loads(body).get("session_id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None
