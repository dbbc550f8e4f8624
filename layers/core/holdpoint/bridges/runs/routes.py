"""External runs (PROTOCOL.md §10): `POST /v1/runs/{run_id}/interrupts` raises a run's interrupts,
whose answers go to a target the agent declares; `GET /v1/runs/{run_id}` reads the run."""

from __future__ import annotations

import time
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.bridges.runs import service as runs
from holdpoint.core.protocols.client import RunInterruptsBody
from holdpoint.http import edge
from holdpoint.http.openapi import BEARER, answers, id_path

router = APIGatewayHttpRouter()


@router.post("/v1/runs/<run_id>/interrupts", security=BEARER, responses=answers(200, 400, 404, 409, 413, 429),
             summary="Raise an external run's interrupts; their answers go to one of the agent's run targets")
def post_run_interrupts(run_id: Annotated[str, id_path("run")], body: RunInterruptsBody) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    edge.check_param_id(run_id, "run_id")
    return runs.raise_run(assembly.get_store(), assembly.get_queue(), who, run_id, body, time.time,
                          backstop=assembly.get_timers)


@router.get("/v1/runs/<run_id>", security=BEARER, responses=answers(200, 400, 404),
            summary="An external run of the caller's: its interrupts, open and answered")
def get_run(run_id: Annotated[str, id_path("run")]) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return runs.view(assembly.get_store(), who, edge.check_id(run_id, f"run {run_id}"))
