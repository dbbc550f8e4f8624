"""`GET /.well-known/jwks.json`: the public keys that verify approval receipts (PROTOCOL.md, "Approval receipts").

Unauthenticated, as a key set is: a JWK Set of EC P-256 keys, the current receipt key's and the
retired ones' still published, read from KMS once per container. Without a receipt key configured
the set is empty."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly

router = APIGatewayHttpRouter()

_KEY_SET = {"type": "object", "required": ["keys"], "properties": {"keys": {"type": "array", "items": {
    "type": "object", "required": ["kty", "crv", "kid", "x", "y"], "properties": {
        "kty": {"const": "EC"}, "crv": {"const": "P-256"}, "alg": {"const": "ES256"}, "use": {"const": "sig"},
        "kid": {"type": "string"}, "x": {"type": "string"}, "y": {"type": "string"}}}}}}


@router.get("/.well-known/jwks.json", summary="The public keys of approval receipts, a JWK Set (no credentials needed)",
            responses={200: {"description": "The current and retired receipt keys (EC P-256, ES256)",
                             "content": {"application/json": {"schema": _KEY_SET}}},
                       503: {"description": "KMS refused for load: try again after `Retry-After`"}})
def key_set() -> Response[dict[str, Any]]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON,
                    body=assembly.get_receipt_keys().jwks(), headers={"Cache-Control": "max-age=300"})
