"""The resume function's resolver: only the resume routes (one interrupt, and several at once),
and no OpenAPI validation, so it loads neither pydantic nor the models (their bodies are checked
against `resume_shape.py`, made from the models, with the same answers)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from holdpoint.http.resolver import new_resolver
from holdpoint.http.resuming import BULK_PATH, PATH, bulk_problem, bulk_request, request_problem, resume_request


def build() -> APIGatewayHttpResolver:
    app = new_resolver(validate=False)

    @app.post(PATH)
    def post_resume(session_id: str, interrupt_id: str) -> dict[str, Any] | Response[dict[str, Any]]:
        event = app.current_event
        refusal = request_problem(event.body, session_id, interrupt_id)
        if refusal is not None:
            return refusal
        body = event.json_body or {}
        return resume_request(event.raw_event, session_id, interrupt_id, body.get("payload"),
                              body.get("expect_fingerprint"), body.get("comment"), body.get("arguments"))

    @app.post(BULK_PATH)
    def post_bulk_resume() -> dict[str, Any] | Response[dict[str, Any]]:
        event = app.current_event
        refusal = bulk_problem(event.body)
        if refusal is not None:
            return refusal
        return bulk_request(event.raw_event, (event.json_body or {})["items"], app.lambda_context)

    return app
