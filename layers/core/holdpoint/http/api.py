"""The API function's resolver: every route (the resume route included, for the OpenAPI document)
and the document itself."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types

from holdpoint.http import openapi
from holdpoint.http.resolver import new_resolver
from holdpoint.http.routes import agents, agui, inbox_page, resume, sessions, streams, tokens, workers


def build() -> APIGatewayHttpResolver:
    app = new_resolver()
    for module in (sessions, streams, resume, agents, tokens, workers, inbox_page, agui):
        app.include_router(module.router)

    @app.get("/v1/openapi.json", summary="This document (no credentials needed)")
    def openapi_json() -> Response[dict[str, Any]]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi.document(app))

    return app
