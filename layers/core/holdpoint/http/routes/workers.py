"""`POST /v1/workers/submit`: a worker that answered a decision with 202 sends its answer here."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.worker_actions import WorkerSubmitBody
from holdpoint.http import edge, rendering
from holdpoint.http.openapi import BEARER, answers
from holdpoint.http.telemetry import count, logger
from holdpoint.ports import TooManyChanges
from holdpoint.services import worker_answers

router = APIGatewayHttpRouter()


@router.post("/v1/workers/submit", security=BEARER, responses=answers(200, 400, 404, 409, 413, 429, holdpoint_403=True),
             summary="A worker's answer to a decision it deferred (machine or operator keys)")
def post_worker_submit(body: WorkerSubmitBody) -> dict[str, Any]:
    logger.append_keys(session_id=body.session_id, decision_id=body.decision_id)
    try:
        out = worker_answers.submit(assembly.get_store(), assembly.get_queue(),
                                    edge.caller(router.current_event.raw_event), body)
    except TooManyChanges:
        raise Refusal("too_many_messages", "this answer adds more than one commit can record", "messages") from None
    if not out.noop:
        count("WorkerAnswersSubmitted")
    return rendering.submitted(out)
