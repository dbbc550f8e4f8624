"""`POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume`: one consistent read (the
interrupt's status, origin and response schema, A1), one conditional write, then one
SendTaskSuccess (R7). API Gateway routes it to the resume function; the API function includes the
same router so the OpenAPI document covers it."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.core.protocol import ResumeBody
from holdpoint.http import edge
from holdpoint.http.openapi import BEARER, answers, id_path
from holdpoint.http.telemetry import count, logger
from holdpoint.services.resume import resume

router = APIGatewayHttpRouter()


@router.post("/v1/sessions/<session_id>/interrupts/<interrupt_id>/resume", security=BEARER,
             responses=answers(200, 400, 404, 409, 413, holdpoint_403=True), summary="Resume an open interrupt")
def post_resume(session_id: Annotated[str, id_path("session")], interrupt_id: Annotated[str, id_path("interrupt")],
                body: ResumeBody) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    edge.check_id(session_id, f"session {session_id}")
    edge.check_param_id(interrupt_id, "interrupt_id")
    logger.append_keys(session_id=session_id, interrupt_id=interrupt_id)
    out = resume(assembly.get_store(), assembly.get_parking(), who, session_id, interrupt_id,
                 edge.check_payload(body.payload))
    logger.info("resume", extra={"noop": out["noop"]})
    if not out["noop"]:
        count("InterruptsResumed")
    return out
