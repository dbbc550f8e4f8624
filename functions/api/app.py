"""API Lambda: every route but the resume (API Gateway sends that one to the resume function).

The load brings only Powertools' resolver module, the logger and the metrics; the routes, their
pydantic models and Powertools' request validation are built on the first request
(`holdpoint.coldstart.Deferred`), which pays for them instead (bench/README.md (c))."""

from __future__ import annotations

from typing import TYPE_CHECKING

from holdpoint.coldstart import Deferred, loading

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver


def routes() -> APIGatewayHttpResolver:
    from holdpoint.http.api import build  # every route module, with the models they validate against

    return build()


with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint.http.resolver import handler_for

    app = Deferred(routes)
    handler = handler_for(app)
