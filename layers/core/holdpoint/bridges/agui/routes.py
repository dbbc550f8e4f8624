"""The AG-UI channel: `POST /v1/channels/ag-ui/agents/{agent_id}/run` and `.../connect` take an
AG-UI `RunAgentInput` and answer AG-UI events as server-sent events (`service`)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.bridges.agui import service as agui
from holdpoint.bridges.agui.models import RunAgentInput
from holdpoint.http import edge, eventstream
from holdpoint.http.openapi import BEARER, answers, id_path
from holdpoint.http.telemetry import logger
from holdpoint.services import streams

router = APIGatewayHttpRouter()
_EVENTS: dict[int, Any] = {200: {"description": "AG-UI events as server-sent events, ending with RUN_FINISHED, "
                                                "RUN_ERROR, or a `holdpoint.continue` CUSTOM event (connect again)",
                                 "content": eventstream.OPENAPI}}


def _answer(events: list[dict[str, Any]]) -> Response[str]:
    return eventstream.reply("".join(eventstream.frame(e) for e in events), retry=False)


@router.post("/v1/channels/ag-ui/agents/<agent_id>/run", security=BEARER,
             responses={**answers(200, 400, 404, 409, 413, 429, holdpoint_403=True), **_EVENTS},
             summary="Run an agent on an AG-UI thread (a session): resume[] answers its interrupts")
def post_run(agent_id: Annotated[str, id_path("agent")], body: Annotated[RunAgentInput, Body()]) -> Response[str]:
    who = edge.caller(router.current_event.raw_event)
    logger.append_keys(session_id=body.threadId)
    return _answer(streams.leased(assembly.get_leases(), who, lambda: agui.run(
        assembly.get_store(), assembly.get_queue(), assembly.get_parking(), who,
        edge.check_id(agent_id, f"agent {agent_id}"), body)))


@router.post("/v1/channels/ag-ui/agents/<agent_id>/connect", security=BEARER,
             responses={**answers(200, 400, 404, 413, 429, holdpoint_403=True), **_EVENTS},
             summary="Follow an AG-UI thread's running turn (or report its last one)")
def post_connect(agent_id: Annotated[str, id_path("agent")],
                 body: Annotated[RunAgentInput, Body()]) -> Response[str]:
    who = edge.caller(router.current_event.raw_event)
    logger.append_keys(session_id=body.threadId)
    return _answer(streams.leased(assembly.get_leases(), who, lambda: agui.connect(
        assembly.get_store(), who, edge.check_id(agent_id, f"agent {agent_id}"), body)))
