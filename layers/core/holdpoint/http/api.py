"""The API function's resolver: every route (the resume route included, for the OpenAPI document)
and the document itself, built on request from every route API Gateway has (those served by the
links and channels functions too, declared in holdpoint.http.routes.elsewhere)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types

from holdpoint.bridges.agui import routes as agui
from holdpoint.bridges.runs import routes as runs
from holdpoint.http import openapi
from holdpoint.http.resolver import new_resolver
from holdpoint.http.routes import agents, inbox_page, resume, sessions, streams, tokens, workers


def build(documented: bool = False) -> APIGatewayHttpResolver:
    """The API function's routes; `documented` adds the other functions' declarations, for the
    document only (so a cold start never imports them)."""
    app = new_resolver()
    for module in (sessions, streams, resume, agents, tokens, workers, inbox_page, agui, runs):
        app.include_router(module.router)
    if documented:
        from holdpoint.bridges.a2a import routes as a2a
        from holdpoint.bridges.mcp import routes as mcp
        from holdpoint.http.routes import elsewhere

        app.include_router(elsewhere.router)
        app.include_router(a2a.documented)
        app.include_router(mcp.documented)

    @app.get("/v1/openapi.json", summary="This document (no credentials needed)",
             responses={200: {"description": "This document", "content": {"application/json": {"schema": {
                 "type": "object", "required": ["openapi", "info", "paths"]}}}}})
    def openapi_json() -> Response[dict[str, Any]]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON,
                        body=openapi.document(build(documented=True)))

    return app
