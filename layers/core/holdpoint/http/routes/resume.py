"""`POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume`: one consistent read (the
interrupt's status, origin and response schema, A1), one conditional write, then one
SendTaskSuccess (R7); and `POST /v1/interrupts/resume`, several interrupts answered at once, each
by the same path. The API function declares them here for its OpenAPI document (validated by
Powertools); API Gateway routes it to the resume function, which serves the same request without
the OpenAPI machinery (holdpoint.http.resume_api)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint.http.bodies import BulkResumeBody, ResumeBody
from holdpoint.http.openapi import BEARER, answers, id_path
from holdpoint.http.resuming import BULK_PATH, PATH, bulk_request, resume_request

router = APIGatewayHttpRouter()


@router.post(PATH, security=BEARER, responses=answers(200, 400, 404, 409, 410, 413, holdpoint_403=True),
             summary="Resume an open interrupt")
def post_resume(session_id: Annotated[str, id_path("session")], interrupt_id: Annotated[str, id_path("interrupt")],
                body: ResumeBody) -> dict[str, Any]:
    return resume_request(router.current_event.raw_event, session_id, interrupt_id, body.payload,
                          body.expect_fingerprint, body.comment, body.arguments)


@router.post(BULK_PATH, security=BEARER, responses=answers(200, 400, 413),
             summary="Answer several interrupts at once: each checked and recorded as its own resume, "
                     "each item's outcome (or refusal, with its status) in `results`")
def post_bulk_resume(body: BulkResumeBody) -> dict[str, Any]:
    return bulk_request(router.current_event.raw_event, [item.model_dump(exclude_unset=True) for item in body.items],
                        router.lambda_context)
