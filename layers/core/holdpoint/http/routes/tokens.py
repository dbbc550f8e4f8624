"""`POST /v1/client-tokens`: a backend's machine or operator key mints a browser's token."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.aws.signing import platform_secret
from holdpoint.http import edge
from holdpoint.http.bodies import ClientTokenBody
from holdpoint.http.openapi import BEARER, answers
from holdpoint.services.tokens import issue

router = APIGatewayHttpRouter()


@router.post("/v1/client-tokens", security=BEARER, responses=answers(200, 400, 404, 413, holdpoint_403=True),
             summary="Mint a short-lived client token for an end user (machine or operator keys)")
def post_client_token(body: ClientTokenBody) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return issue(assembly.get_store(), platform_secret, who, body.identity.id, ttl_seconds=body.ttl_seconds,
                 session_id=body.session_id, metadata=body.identity.metadata, groups=body.identity.groups)
