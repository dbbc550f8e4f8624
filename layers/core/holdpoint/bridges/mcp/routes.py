"""The MCP server (PROTOCOL.md §9), served by the protocols function: `POST /mcp/{agent_id}`, MCP
2026-07-28's stateless Streamable HTTP (one JSON-RPC request in, one JSON response out; an API
key or a client token). The body is parsed here, not by Powertools: a request that is not
JSON-RPC gets a JSON-RPC error (with the HTTP status the revision gives its code: 400, or 404 for
an unknown method), never a Holdpoint body and never a 5xx. The OpenAPI document states the route
in its fragment (http/openapi_elsewhere.json)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ValidationError

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.bridges.mcp import models
from holdpoint.bridges.mcp import service as mcp
from holdpoint.bridges.mcp import translation as wire
from holdpoint.core.errors import JsonProblem, Refusal, RpcError
from holdpoint.core.ids import first_error
from holdpoint.core.strictjson import loads
from holdpoint.http import edge
from holdpoint.http.telemetry import logger
from holdpoint.services.caller import Caller

router = APIGatewayHttpRouter()

RPC = "/mcp/<agent_id>"


def _json(status: int, body: Any) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def _error(request_id: Any, exc: RpcError) -> Response[Any]:
    return _json(wire.HTTP_STATUS.get(exc.code, 200), wire.error(request_id, exc.code, exc.message, exc.param,
                                                                 **exc.data))


def unreadable(message: str) -> dict[str, Any]:
    """A body the protocols function's limits refuse before any route reads it (too deep, not
    UTF-8), as MCP answers one that does not parse: a JSON-RPC parse error, HTTP 400."""
    return edge.json_reply(400, wire.error(None, wire.PARSE_ERROR, message, "body"))


@router.post(RPC)
def post_rpc(agent_id: str) -> Response[Any]:
    event = router.current_event.raw_event
    who = edge.caller(event)
    edge.check_id(agent_id, f"agent {agent_id}")
    mcp.agent_for(assembly.get_store(), who, agent_id)  # 404 before the body is read
    return dispatch(who, agent_id, event)


def dispatch(who: Caller, agent_id: str, event: dict[str, Any]) -> Response[Any]:
    """One JSON-RPC request: parsed, its envelope checked, then its method; every failure a JSON-RPC error."""
    body = event.get("body") or ""
    try:
        raw = loads(body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body))
    except JsonProblem:
        return _error(None, RpcError(wire.PARSE_ERROR, "the body is not valid JSON", "body"))
    request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str | int) else None
    try:
        request = models.Request.model_validate(raw)
    except ValidationError as exc:
        param, message = first_error(exc)
        return _error(request_id, RpcError(wire.INVALID_REQUEST, f"not a JSON-RPC 2.0 request: {message}",
                                                param or "body"))
    if "id" not in raw:  # a notification: nothing in this revision acts on one
        return _json(202, {})
    logger.append_keys(rpc_method=edge.short(request.method, 64))
    try:
        method = _METHODS.get(request.method)
        if method is None:
            raise RpcError(wire.METHOD_NOT_FOUND, f"no method {edge.short(request.method)}", "method")
        capabilities = _envelope(request, event)
        return _json(200, wire.result(request.id, method(_Call(who, agent_id, request, capabilities, event))))
    except RpcError as exc:
        return _error(request.id, exc)


def _envelope(request: models.Request, event: dict[str, Any]) -> dict[str, Any]:
    """The client capabilities, once the version (body and header) is one this server speaks."""
    version, capabilities = wire.envelope(request.params)
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    said = headers.get("mcp-protocol-version")
    if said is not None and said != version:
        raise RpcError(wire.HEADER_MISMATCH, "the MCP-Protocol-Version header is not the envelope's version",
                            "MCP-Protocol-Version")
    if headers.get("mcp-method", request.method) != request.method:
        raise RpcError(wire.HEADER_MISMATCH, "the Mcp-Method header is not the body's method", "Mcp-Method")
    if version != wire.PROTOCOL_VERSION:
        raise RpcError(wire.UNSUPPORTED_VERSION, f"MCP {edge.short(version, 32)} is not supported",
                            f"params._meta.{wire.VERSION_KEY}", supported=[wire.PROTOCOL_VERSION],
                            requested=version)
    return capabilities


class _Call:
    def __init__(self, who: Caller, agent_id: str, request: models.Request, capabilities: dict[str, Any],
                 event: dict[str, Any]) -> None:
        self.who, self.agent_id, self.request, self.capabilities, self.event = (
            who, agent_id, request, capabilities, event)
        self.params = {k: v for k, v in (request.params or {}).items() if k != "_meta"}


def _params(model: type[BaseModel], value: Any, prefix: str = "") -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        param, message = first_error(exc, prefix)
        raise RpcError(wire.INVALID_PARAMS, f"{message} ({param})", param or "params") from None


def _discover(call: _Call) -> Any:
    return wire.discover()


def _ping(call: _Call) -> Any:
    return {"resultType": "complete"}


def _list_tools(call: _Call) -> Any:
    return {"resultType": "complete", "tools": wire.tools(), "cacheScope": "public", "ttlMs": 0}


def _call_tool(call: _Call) -> Any:
    """`tools/call`: bad arguments are -32602 naming the field (nothing recorded); a rule's refusal
    (not found, a policy, a schema, a quota) is the tool's result with `isError`."""
    params: models.CallTool = _params(models.CallTool, call.params)
    tool = models.TOOLS.get(params.name)
    if tool is None:
        raise RpcError(wire.INVALID_PARAMS, f"no tool {edge.short(params.name)}", "name")
    args = _params(tool[0], params.arguments or {}, "arguments")
    store, who = assembly.get_store(), call.who
    try:
        if params.name == "request_approval" and params.requestState is not None:
            return mcp.answered_here(store, assembly.get_parking(), signing, who, call.agent_id, params.requestState,
                                     params.inputResponses)
        if params.name == "request_approval":
            request_id = str((call.event.get("requestContext") or {}).get("requestId") or call.request.id)
            return mcp.request(store, assembly.get_queue(), signing, who, call.agent_id, args, call.capabilities,
                               request_id)
        if params.name == "get_approval":
            return mcp.get(store, who, call.agent_id, args)
        if params.name == "list_pending_approvals":
            return mcp.pending(store, signing, who, call.agent_id, args)
        return mcp.answer(store, assembly.get_parking(), who, args)
    except Refusal as exc:
        return wire.tool_error(exc)


def _tasks(run: Callable[[_Call, models.TaskRef], Any]) -> Callable[[_Call], Any]:
    """A `tasks/*` method: for a client that declared the extension; an unknown task is -32602."""
    def method(call: _Call) -> Any:
        if not wire.has_tasks(call.capabilities):
            raise RpcError(wire.MISSING_CAPABILITY, f"tasks/* needs the {wire.TASKS} extension declared",
                                f"params._meta.{wire.CAPABILITIES_KEY}.extensions",
                                requiredCapabilities={"extensions": {wire.TASKS: {}}})
        ref = _params(models.TaskRef, call.params)
        try:
            return run(call, ref)
        except Refusal as exc:
            raise RpcError(wire.INVALID_PARAMS, exc.message, exc.param or "taskId", reason=exc.code) from None
    return method


_METHODS: dict[str, Callable[[_Call], Any]] = {
    "server/discover": _discover,
    "ping": _ping,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
    "tasks/get": _tasks(lambda call, ref: mcp.task(assembly.get_store(), call.who, call.agent_id, ref)),
    "tasks/update": _tasks(lambda call, ref: (mcp.task(assembly.get_store(), call.who, call.agent_id, ref),
                                              {"resultType": "complete"})[1]),  # an approval asks the client nothing
    "tasks/cancel": _tasks(lambda call, ref: mcp.cancel(assembly.get_store(), assembly.get_parking(), call.who,
                                                        call.agent_id, ref)),
}
"""The methods this server answers (MCP 2026-07-28 with the tasks extension)."""
