"""HTTP API Lambda authorizer (simple responses): API key or client JWT -> tenant, subject, origin."""

from __future__ import annotations

from typing import Any

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from aws_lambda_powertools import Logger

    from holdpoint.assembly import get_store
    from holdpoint.aws.signing import platform_secret
    from holdpoint.http.credentials import authenticate, context_of

    logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    token = headers.get("authorization")
    if token is None and event.get("identitySource"):
        token = event["identitySource"][0]
    caller = authenticate(token, get_store(), platform_secret)
    if caller is None:
        logger.info("denied", extra={"route": event.get("routeKey")})
        return {"isAuthorized": False}
    return {"isAuthorized": True, "context": context_of(caller)}
