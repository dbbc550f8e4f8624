"""HTTP API Lambda authorizer (simple responses): API key, client JWT or a token of a tenant's
identity provider -> tenant, subject, origin.
The WebSocket API's `$connect` uses it too (an event with `methodArn`): the same check, answered
as an IAM policy; a browser, which cannot set a header there, may send its token as `?token=`."""

from __future__ import annotations

from typing import Any

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from aws_lambda_powertools import Logger

    from holdpoint import tracing
    from holdpoint.assembly import get_store
    from holdpoint.aws.signing import platform_secret
    from holdpoint.http.credentials import authenticate, context_of, websocket_answer
    from holdpoint.outbound.signing_keys import SigningKeys
    from holdpoint.ports import Throttled, Unavailable

    logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child
    keys = SigningKeys()  # each declared provider's keys, kept across the container's invocations


@tracing.capture
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    token = headers.get("authorization")
    if token is None and event.get("identitySource"):
        token = event["identitySource"][0]
    if event.get("methodArn"):  # a WebSocket API's REQUEST authorizer
        if token is None:
            query = (event.get("queryStringParameters") or {}).get("token")
            token = f"Bearer {query}" if query else None
        # An AWS refusal here raises: API Gateway refuses the connect, and the client connects again.
        return websocket_answer(authenticate(token, get_store(), platform_secret, keys), str(event["methodArn"]))
    try:
        caller = authenticate(token, get_store(), platform_secret, keys)
    except (Throttled, Unavailable) as exc:
        # API Gateway answers an authorizer that raises with a bare 500, and a denial is a 403 that
        # would tell good credentials they are bad: let the request through with no caller, marked,
        # and the edge answers it 503 with Retry-After before any route runs (http/edge.py).
        kind = "throttled" if isinstance(exc, Throttled) else "unavailable"
        logger.warning("credentials not checked: aws refused", extra={"kind": kind})
        return {"isAuthorized": True, "context": {"unavailable": kind}}
    if caller is None:
        logger.info("denied", extra={"route": event.get("routeKey")})
        return {"isAuthorized": False}
    return {"isAuthorized": True, "context": context_of(caller)}
