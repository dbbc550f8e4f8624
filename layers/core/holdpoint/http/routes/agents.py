"""Agents: declare (PUT) and read (GET) a tenant's agent configs; API keys only, never client tokens."""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.http import edge
from holdpoint.http.openapi import BEARER, answers, id_path
from holdpoint.outbound.declared import check_agent, warnings

MAX_AGENT_BYTES = 131_072
"""An agent config is copied into the header of every session it starts, which must stay under 400 KB."""

router = APIGatewayHttpRouter()


@router.put("/v1/agents/<agent_id>", security=BEARER, responses=answers(200, 400, 404, 413),
            summary="Declare an agent")
def put_agent(agent_id: Annotated[str, id_path("agent")], body: AgentConfig) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    who.require_key("declare agents")
    edge.check_param_id(agent_id, "agent_id")
    config = body.wire()
    if len(json.dumps(config, separators=(",", ":"))) > MAX_AGENT_BYTES:
        raise Refusal("payload_too_large", f"the agent config is over {MAX_AGENT_BYTES} bytes")
    check_agent(body, who.tenant)
    assembly.get_store().put_agent(who.tenant, agent_id, config)
    out: dict[str, Any] = {"agent_id": agent_id, "agent": config}
    said = warnings(config)
    if said:  # declared all the same: the variable may be set before the first session
        out["warnings"] = said
    return out


@router.get("/v1/agents/<agent_id>", security=BEARER, responses=answers(200, 404), summary="An agent's config")
def get_agent(agent_id: Annotated[str, id_path("agent")]) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    who.require_key("read agents")
    edge.check_id(agent_id, f"agent {agent_id}")
    config = assembly.get_store().get_agent(who.tenant, agent_id)
    if config is None:
        raise Refusal("not_found", f"agent {agent_id} not found")
    return {"agent_id": agent_id, "agent": config}
