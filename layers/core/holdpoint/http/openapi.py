"""How routes describe themselves in the OpenAPI document: what each really answers, with which
body (Holdpoint's `{"error": ...}` or API Gateway's own `{"message": ...}`), and the id pattern."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from holdpoint.core.ids import ID_REGEX
from holdpoint.http.bodies import Error, GatewayError

ELSEWHERE = pathlib.Path(__file__).with_name("openapi_elsewhere.json")
"""The routes API Gateway sends to other functions, as the document states them: the links
function's (`/v1/links/{token}`), the channels function's (Slack's clicks) and the protocols
function's (A2A's Agent Card and JSON-RPC endpoint, MCP's). Their handlers read their bodies by
hand (a form, a signed form, JSON-RPC), so no route of theirs declares a shape to build this from;
tests/unit/test_openapi_fragment.py holds it to the paths they serve and the models they parse."""
BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
"""Every route but the OpenAPI document: an API key or token, checked by the Lambda authorizer."""
_WHY: dict[int, tuple[str, Any]] = {
    400: ("Invalid input; `param` names the field", Error),
    401: ("API Gateway: no Authorization header", GatewayError),
    403: ("API Gateway: the authorizer refused the credentials", GatewayError),
    404: ("Holdpoint: not found, or another tenant's; API Gateway: no route (an empty path id)",
          Error | GatewayError),
    409: ("The session's state refuses it now (`interrupted`, `turn_already_active`, `call_not_open`, "
          "`call_held`, `conflict`, `stale_approval`, `decision_not_current`)", Error),
    410: ("`interrupt_expired`: the answer came at or after the interrupt's `expires_at`; nothing was recorded",
          Error),
    413: ("Holdpoint: a body over 1 MiB or a payload too large to record; API Gateway: a body over 10 MiB",
          Error | GatewayError),
    422: ("Unknown input `type`", Error),
    429: ("`quota_exceeded`: a tenant, session or caller limit is reached (`param` names it); nothing was "
          "recorded. The `Retry-After` header says how many seconds to wait", Error),
}


def answers(ok: int, *codes: int, holdpoint_403: bool = False) -> dict[int, OpenAPIResponse]:
    """The statuses a route can answer, each with the body it really has (Holdpoint's or API Gateway's)."""
    out: dict[int, OpenAPIResponse] = {ok: {"description": "Accepted" if ok == 202 else "OK"}}
    for code in (401, 403, *codes):
        text, model = _WHY[code]
        if code == 403 and holdpoint_403:
            text, model = text + "; Holdpoint: this caller may not do this", Error | GatewayError
        out[code] = {"description": text, "content": {"application/json": {"model": model}}}
        if code == 429:
            out[code]["headers"] = {"Retry-After": {"description": "seconds to wait before retrying",
                                                    "schema": {"type": "integer", "minimum": 1}}}
    return out


def refusal(code: int, text: str | None = None) -> OpenAPIResponse:
    """One refusal's answer: as `_WHY` says, or Holdpoint's own (`text`) on a route API Gateway
    runs no authorizer on (links, Slack), where 401 and 403 are Holdpoint's too."""
    if text:
        return {"description": text, "content": {"application/json": {"model": Error}}}
    why, model = _WHY[code]
    return {"description": why, "content": {"application/json": {"model": model}}}


def id_path(what: str) -> Any:
    """A path id, documented with the pattern every stored id matches (a miss is answered like the
    id itself would be: 404 unknown, or 400 where it names a new one)."""
    return Path(pattern=ID_REGEX, description=f"the {what} id")


def document(app: APIGatewayHttpResolver) -> dict[str, Any]:
    """The document from the routes and the fragment of the other functions' (`ELSEWHERE`), less
    the 422 Powertools adds to every route: ours is declared per route (an unknown input `type`),
    and other validation errors are 400s."""
    # Powertools' OpenAPI models cost ~35 ms to import; only the document needs them, not a request.
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    doc: dict[str, Any] = json.loads(app.get_openapi_json_schema(
        title="Holdpoint API", version="1.0.0",
        security_schemes={"bearer": HTTPBearer(description="An API key (`hp_...`) or a token minted from one")}))
    elsewhere = json.loads(ELSEWHERE.read_text())
    doc["paths"].update(elsewhere["paths"])
    doc["components"]["schemas"].update(elsewhere["components"]["schemas"])
    for ops in doc["paths"].values():
        for op in ops.values():
            refusal = op["responses"].get("422", {}).get("content", {}).get("application/json", {})
            if refusal.get("schema", {}).get("$ref", "").endswith("/HTTPValidationError"):
                del op["responses"]["422"]
    text = json.dumps(doc["paths"])
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        if f"/{name}\"" not in text:
            doc["components"]["schemas"].pop(name, None)
    return doc
