"""The OpenAPI document's fragment (holdpoint/http/openapi_elsewhere.json) states the routes the
links, channels and protocols functions serve, which no route of theirs declares (their handlers
read their bodies by hand). It is held to them here: it states every route they serve and no
other, each path id as the route names it, and A2A's and MCP's JSON-RPC request as Powertools
states their models, so a route or a model that changes fails here until the fragment follows."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.params import Body

from holdpoint.bridges.a2a import models as a2a_models
from holdpoint.bridges.mcp import models as mcp_models
from holdpoint.core.sealing import MAX_TOKEN_CHARS
from holdpoint.http import api, channels_api, links_api, openapi, protocols_api

FRAGMENT: dict[str, Any] = json.loads(openapi.ELSEWHERE.read_text())


def served(app: APIGatewayHttpResolver) -> set[tuple[str, str]]:
    """(path as the document writes it, method) of every route a resolver serves."""
    return {(re.sub(r"<(\w+)>", r"{\1}", route.path), route.method.lower())
            for route in [*app._static_routes, *app._dynamic_routes]}


def test_the_fragment_states_every_route_the_other_functions_serve_and_no_other() -> None:
    elsewhere = served(links_api.build()) | served(channels_api.build()) | served(protocols_api.build())
    stated = {(path, method) for path, ops in FRAGMENT["paths"].items() for method in ops}
    assert stated == elsewhere
    assert not stated & served(api.build())  # the API function's own routes state themselves


def test_the_fragment_names_each_path_id_its_route_names() -> None:
    for path, ops in FRAGMENT["paths"].items():
        for op in ops.values():
            named = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert named == set(re.findall(r"{(\w+)}", path)), path
    [token] = [p for p in FRAGMENT["paths"]["/v1/links/{token}"]["get"]["parameters"] if p["in"] == "path"]
    assert token["schema"]["maxLength"] == MAX_TOKEN_CHARS


def test_the_fragment_states_the_json_rpc_requests_as_their_models_do() -> None:
    """What Powertools makes of A2A's and MCP's `Request` (two models of one name, so each named by
    its published module) is what the fragment says, and each endpoint takes the one of its protocol."""
    app = APIGatewayHttpResolver(enable_validation=True)

    @app.post("/a2a")
    def a2a_request(body: Annotated[a2a_models.Request, Body()]) -> None:
        raise NotImplementedError

    @app.post("/mcp")
    def mcp_request(body: Annotated[mcp_models.Request, Body()]) -> None:
        raise NotImplementedError

    made = json.loads(app.get_openapi_json_schema())["components"]["schemas"]
    stated = FRAGMENT["components"]["schemas"]
    for name in ("holdpoint__core__a2a__Request", "holdpoint__core__mcp__Request"):
        assert stated[name] == made[name]
    for path, name in (("/a2a/{tenant}/{agent_id}", "holdpoint__core__a2a__Request"),
                       ("/mcp/{agent_id}", "holdpoint__core__mcp__Request")):
        body = FRAGMENT["paths"][path]["post"]["requestBody"]
        assert body["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{name}"}
