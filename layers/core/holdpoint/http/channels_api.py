"""The channels function's resolver: interactions from chat channels (Slack's button clicks),
whose bodies are form-encoded and signed by the channel, not JSON with a bearer token."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from holdpoint.http.resolver import new_resolver
from holdpoint.notify import routes as channels


def build() -> APIGatewayHttpResolver:
    app = new_resolver(validate=False)
    app.include_router(channels.router)
    return app
