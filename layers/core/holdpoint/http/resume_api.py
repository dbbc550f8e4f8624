"""The resume function's resolver: only the resume route, so it loads no more than it uses."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from holdpoint.http.resolver import new_resolver
from holdpoint.http.routes import resume


def build() -> APIGatewayHttpResolver:
    app = new_resolver()
    app.include_router(resume.router)
    return app
