"""The A2A server (PROTOCOL.md §8), served by the protocols function: an agent's Agent Card at
`GET /a2a/{tenant}/{agent_id}/.well-known/agent-card.json` (no credentials; only an agent that
declares `a2a.public`), and its JSON-RPC 2.0 endpoint `POST /a2a/{tenant}/{agent_id}` (an API key
or a client token). The body is parsed here, not by Powertools: a request that is not JSON-RPC
gets a JSON-RPC error (HTTP 200, as A2A's JSON-RPC binding answers), never a Holdpoint body.
The OpenAPI document states both routes in its fragment (http/openapi_elsewhere.json)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ValidationError

from holdpoint import assembly
from holdpoint.bridges.a2a import models
from holdpoint.bridges.a2a import service as a2a
from holdpoint.bridges.a2a import translation as wire
from holdpoint.core.errors import JsonProblem, Refusal
from holdpoint.core.ids import first_error
from holdpoint.core.strictjson import loads
from holdpoint.http import edge, eventstream
from holdpoint.http.telemetry import logger
from holdpoint.outbound import netguard
from holdpoint.services import streams
from holdpoint.services.caller import Caller

router = APIGatewayHttpRouter()

CARD = "/a2a/<tenant>/<agent_id>/.well-known/agent-card.json"
RPC = "/a2a/<tenant>/<agent_id>"
PUBLIC_URL_ENV = "HOLDPOINT_PUBLIC_API_URL"
_VERSIONS = ("1.0", "1")


def _json(status: int, body: Any) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def unreadable(message: str) -> dict[str, Any]:
    """A body the protocols function's limits refuse before any route reads it (too deep, not
    UTF-8), as A2A answers one that does not parse: a JSON-RPC parse error, HTTP 200."""
    return edge.json_reply(200, wire.error(None, wire.PARSE_ERROR, message, "parse_error", "body"))


def base_url(event: dict[str, Any]) -> str:
    """Where this API is reached, from configuration only: the deployment's `PublicApiUrl`, else
    the domain API Gateway received the request on (`requestContext.domainName`, set by API
    Gateway, one of the API's own). Never the `Host` or `X-Forwarded-Proto` a caller sends, so a
    card cannot be made to send its readers elsewhere."""
    configured = os.environ.get(PUBLIC_URL_ENV)
    if configured:
        return configured.rstrip("/")
    return f"https://{(event.get('requestContext') or {}).get('domainName') or 'localhost'}"


@router.get(CARD)
def get_card(tenant: str, agent_id: str) -> Response[Any]:
    edge.check_id(tenant, f"agent {agent_id}")
    edge.check_id(agent_id, f"agent {agent_id}")
    return _json(200, a2a.public_card(assembly.get_store(), base_url(router.current_event.raw_event), tenant,
                                      agent_id))


@router.post(RPC)
def post_rpc(tenant: str, agent_id: str) -> Response[Any]:
    event = router.current_event.raw_event
    who = edge.caller(event)
    edge.check_id(tenant, f"agent {agent_id}")
    edge.check_id(agent_id, f"agent {agent_id}")
    config = a2a.agent_for(assembly.get_store(), who, tenant, agent_id)  # 404 before the body is read
    return dispatch(who, tenant, agent_id, config, event)


def dispatch(who: Caller, tenant: str, agent_id: str, config: Any, event: dict[str, Any]) -> Response[Any]:
    """One JSON-RPC request: parsed, checked, then its method; every failure a JSON-RPC error."""
    body = event.get("body") or ""
    try:
        raw = loads(body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body))
    except JsonProblem:
        return _json(200, wire.error(None, wire.PARSE_ERROR, "the body is not valid JSON", "parse_error", "body"))
    request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str | int) else None
    try:
        request = models.Request.model_validate(raw)
    except ValidationError as exc:
        param, message = first_error(exc)
        return _json(200, wire.error(request_id, wire.INVALID_REQUEST, f"not a JSON-RPC 2.0 request: {message}",
                                     "invalid_request", param or "body"))
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    version = headers.get("a2a-version")
    if version and version.strip() not in _VERSIONS:
        return _json(200, wire.error(request.id, -32009, f"A2A version {edge.short(version)} is not supported; "
                                     f"this server speaks {wire.PROTOCOL_VERSION}", "version_not_supported",
                                     "A2A-Version"))
    logger.append_keys(rpc_method=edge.short(request.method, 64))
    method = _METHODS.get(request.method)
    if method is None:
        return _json(200, wire.error(request.id, wire.METHOD_NOT_FOUND, f"no method {edge.short(request.method)}",
                                     "method_not_found", "method"))
    model, run, code = method
    try:
        params = model.model_validate(request.params or {}) if model is not None else None
    except ValidationError as exc:
        param, message = first_error(exc)
        return _json(200, wire.error(request.id, wire.INVALID_PARAMS, f"{message} ({param})", "validation_error",
                                     f"params.{param}" if param else "params"))
    try:
        return run(_Call(who, tenant, agent_id, config, request.id, event), params)
    except Refusal as exc:
        return _json(200, wire.refused(request.id, exc, code if exc.code != "not_found" else None))


class _Call:
    def __init__(self, who: Caller, tenant: str, agent_id: str, config: Any, request_id: Any,
                 event: dict[str, Any]) -> None:
        self.who, self.tenant, self.agent_id, self.config, self.id, self.event = (
            who, tenant, agent_id, config, request_id, event)


def _check_push(params: models.SendMessage) -> models.SendMessage:
    """A push config's URL is held to the worker URL rules (`netguard`) before anything is recorded."""
    spec = params.configuration.taskPushNotificationConfig if params.configuration else None
    if spec is not None:
        _check_url(spec.url, "configuration.taskPushNotificationConfig.url")
    return params


def _check_url(url: str, param: str) -> None:
    problem = netguard.check_url(url, param)
    if problem:
        raise Refusal("validation_error", problem, param)


def _send(call: _Call, params: Any) -> Response[Any]:
    _check_push(params)
    task = streams.leased(assembly.get_leases(), call.who, lambda: a2a.send(
        assembly.get_store(), assembly.get_queue(), assembly.get_parking(), call.who, call.agent_id, params,
        configs=assembly.get_push_configs()))
    return _json(200, wire.result(call.id, {"task": task}))


def _stream(call: _Call, params: Any) -> Response[Any]:
    """`SendStreamingMessage`: the task as the message left it, then its status once the turn
    ends or parks (or the cap comes), as server-sent events in one body (API Gateway buffers)."""
    store = assembly.get_store()

    _check_push(params)

    def run() -> list[dict[str, Any]]:
        sent = a2a.send(store, assembly.get_queue(), assembly.get_parking(), call.who, call.agent_id, params,
                        wait_secs=0, configs=assembly.get_push_configs())
        return _updates(call, sent)

    return _events(call, streams.leased(assembly.get_leases(), call.who, run))


def _subscribe(call: _Call, params: Any) -> Response[Any]:
    """`SubscribeToTask`: the task now, then its status once it ends or parks (or the cap comes)."""
    def run() -> list[dict[str, Any]]:
        return _updates(call, a2a.get(assembly.get_store(), call.who, call.agent_id, params))

    return _events(call, streams.leased(assembly.get_leases(), call.who, run))


def _updates(call: _Call, first: dict[str, Any]) -> list[dict[str, Any]]:
    """The task, then (unless it is final or waits for input already) its status when the turn
    ends or parks: the long-poll of the event log."""
    out = [{"task": first}]
    state = first["status"]["state"]
    if state in wire.TERMINAL or state == "TASK_STATE_INPUT_REQUIRED":
        return out
    sid, turn = wire.split_task(first["id"], "id")
    last = a2a.follow(assembly.get_store(), call.who, sid, turn, streams.until(None), time.monotonic)
    out.append({"statusUpdate": {"taskId": last["id"], "contextId": last["contextId"], "status": last["status"]}})
    return out


def _events(call: _Call, results: list[dict[str, Any]]) -> Response[Any]:
    return eventstream.reply("".join(eventstream.frame(wire.result(call.id, r)) for r in results), retry=False)


def _get(call: _Call, params: Any) -> Response[Any]:
    return _json(200, wire.result(call.id, a2a.get(assembly.get_store(), call.who, call.agent_id, params)))


def _cancel(call: _Call, params: Any) -> Response[Any]:
    return _json(200, wire.result(call.id, a2a.cancel(assembly.get_store(), assembly.get_parking(), call.who,
                                                      call.agent_id, params)))


def _card(call: _Call, params: Any) -> Response[Any]:
    return _json(200, wire.result(call.id, wire.card(base_url(call.event), call.tenant, call.agent_id, call.config)))


def _create_push(call: _Call, params: Any) -> Response[Any]:
    _check_url(params.url, "url")
    return _json(200, wire.result(call.id, a2a.create_push(assembly.get_store(), assembly.get_push_configs(),
                                                           call.who, call.agent_id, params)))


def _get_push(call: _Call, params: Any) -> Response[Any]:
    return _json(200, wire.result(call.id, a2a.get_push(assembly.get_store(), assembly.get_push_configs(), call.who,
                                                        call.agent_id, params)))


def _list_push(call: _Call, params: Any) -> Response[Any]:
    return _json(200, wire.result(call.id, a2a.list_push(assembly.get_store(), assembly.get_push_configs(),
                                                         call.who, call.agent_id, params)))


def _delete_push(call: _Call, params: Any) -> Response[Any]:
    return _json(200, wire.result(call.id, a2a.delete_push(assembly.get_store(), assembly.get_push_configs(),
                                                           call.who, call.agent_id, params)))


def _unsupported(call: _Call, params: Any) -> Response[Any]:
    raise Refusal("invalid_request", "ListTasks is not supported; list sessions with GET /v1/sessions", "method")


_METHODS: dict[str, tuple[type[BaseModel] | None, Callable[[_Call, Any], Response[Any]], int | None]] = {
    "SendMessage": (models.SendMessage, _send, None),
    "SendStreamingMessage": (models.SendMessage, _stream, None),
    "GetTask": (models.TaskRef, _get, None),
    "CancelTask": (models.TaskRef, _cancel, wire.TASK_NOT_CANCELABLE),
    "SubscribeToTask": (models.TaskRef, _subscribe, None),
    "GetExtendedAgentCard": (None, _card, None),
    "ListTasks": (None, _unsupported, wire.UNSUPPORTED),
    "CreateTaskPushNotificationConfig": (models.PushConfig, _create_push, None),
    "GetTaskPushNotificationConfig": (models.PushRef, _get_push, None),
    "ListTaskPushNotificationConfigs": (models.PushList, _list_push, None),
    "DeleteTaskPushNotificationConfig": (models.PushRef, _delete_push, None),
}
"""A2A 1.0's JSON-RPC methods: (params model, handler, the JSON-RPC code its refusals get)."""
