"""`PUT` and `GET /v1/identity-provider`: the tenant's OIDC issuer (operator keys only)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.http import edge
from holdpoint.http.bodies import IdentityProviderDeclaration
from holdpoint.http.openapi import BEARER, answers
from holdpoint.services import identity

router = APIGatewayHttpRouter()


@router.put("/v1/identity-provider", security=BEARER, responses=answers(200, 400, 404, 409, 413, holdpoint_403=True),
            summary="Declare the tenant's identity provider (operator keys)")
def put_identity_provider(body: IdentityProviderDeclaration) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return identity.declare(assembly.get_store(), who, body.checked_provider()).wire()


@router.get("/v1/identity-provider", security=BEARER, responses=answers(200, 404, holdpoint_403=True),
            summary="The tenant's identity provider (operator keys)")
def get_identity_provider() -> dict[str, Any]:
    return identity.declared(assembly.get_store(), edge.caller(router.current_event.raw_event)).wire()
