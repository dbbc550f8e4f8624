"""The API function's resolver: every route (the resume route included, for the OpenAPI document)
and the document itself, built on request from these routes and the fragment that states the
routes other functions serve (the links, Slack's clicks, A2A and MCP: `openapi.document`)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types

from holdpoint.bridges.agui import routes as agui
from holdpoint.bridges.runs import routes as runs
from holdpoint.http import openapi
from holdpoint.http.resolver import new_resolver
from holdpoint.http.routes import (
    agents,
    identity,
    inbox_page,
    receipt_keys,
    resume,
    sessions,
    streams,
    tokens,
    workers,
)


def build() -> APIGatewayHttpResolver:
    """The API function's routes, each a route it serves."""
    app = new_resolver()
    for module in (sessions, streams, resume, agents, identity, tokens, workers, inbox_page, receipt_keys, agui, runs):
        app.include_router(module.router)

    @app.get("/v1/openapi.json", summary="This document (no credentials needed)",
             responses={200: {"description": "This document", "content": {"application/json": {"schema": {
                 "type": "object", "required": ["openapi", "info", "paths"]}}}}})
    def openapi_json() -> Response[dict[str, Any]]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON,
                        body=openapi.document(build()))

    return app
