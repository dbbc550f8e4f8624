"""HTTP API handler: parse, call the core, shape the reply."""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.metrics import MetricUnit
from holdpoint import sessions
from holdpoint.auth import Caller
from holdpoint.inputs import ApiError
from holdpoint.models import (
    INPUT_TAGS,
    AgentConfig,
    ClientInput,
    Id,
    InterruptResumeInput,
    RaiseInterruptBody,
    SettleBody,
    error_param,
    first_error,
)
from holdpoint.parking import Parking
from holdpoint.queue import WorkQueue
from holdpoint.resume import resume
from holdpoint.settle import settle
from holdpoint.store import Store
from holdpoint.workers import check_url
from pydantic import TypeAdapter, ValidationError

MAX_BODY_BYTES = 1_048_576
ID: TypeAdapter[str] = TypeAdapter(Id)

logger = Logger(service="holdpoint-api")
metrics = Metrics(namespace="Holdpoint", service="api")
app = APIGatewayHttpResolver(enable_validation=True)
_deps: dict[str, Any] = {}


def deps() -> tuple[Store, WorkQueue, Parking]:
    """Clients are built once per container, on first use (keeps cold start small)."""
    if not _deps:
        _deps["store"], _deps["queue"], _deps["parking"] = Store(), WorkQueue(), Parking()
    return _deps["store"], _deps["queue"], _deps["parking"]


def caller() -> Caller:
    ctx = (app.current_event.raw_event.get("requestContext") or {}).get("authorizer") or {}
    lam = ctx.get("lambda") or {}
    if not lam.get("tenant"):
        raise ApiError(401, "unauthorized", "missing or invalid credentials")
    return Caller.from_context(lam)


def check_id(value: str, what: str) -> str:
    try:
        ID.validate_python(value)
    except ValidationError:
        raise ApiError(404, "not_found", f"{what} not found") from None
    return value


def respond(exc: ApiError) -> Response[dict[str, Any]]:
    return Response(status_code=exc.status, content_type=content_types.APPLICATION_JSON, body=exc.body())


def error(status: int, code: str, message: str, param: str | None = None) -> Response[dict[str, Any]]:
    return respond(ApiError(status, code, message, param))


@app.exception_handler(ApiError)
def on_api_error(exc: ApiError) -> Response[dict[str, Any]]:
    logger.info("refused", extra={"code": exc.code, "status": exc.status})
    return respond(exc)


@app.exception_handler(RequestValidationError)
def on_validation_error(exc: RequestValidationError) -> Response[dict[str, Any]]:
    err = list(exc.errors())[0]
    loc = tuple(err.get("loc") or ())
    if loc and loc[0] == "body":
        loc = loc[1:]
    kind = err.get("type", "")
    if kind == "union_tag_invalid":
        return error(422, "unknown_input_type", "unknown input type", "type")
    if kind == "union_tag_not_found":
        return error(400, "validation_error", "field required", "type")
    if kind in ("json_invalid", "model_attributes_type", "dict_type") and not loc:
        return error(400, "validation_error", "body must be a JSON object", "body")
    param = error_param(loc, INPUT_TAGS) or "body"
    return error(400, "validation_error", str(err.get("msg") or "invalid"), param)


@app.exception_handler(ValidationError)
def on_model_error(exc: ValidationError) -> Response[dict[str, Any]]:
    param, msg = first_error(exc)
    return error(400, "validation_error", msg, param or "body")


# --- sessions and inputs -------------------------------------------------------------


def _submit(session_id: str | None, body: Any) -> Response[dict[str, Any]]:
    store, queue, parking = deps()
    who = caller()
    if isinstance(body, InterruptResumeInput):
        if session_id is None:
            raise ApiError(400, "validation_error", "interrupt.resume needs an existing session", "type")
        out = resume(store, parking, who, session_id, body.interrupt_id, body.payload)
        if not out["noop"]:
            metrics.add_metric(name="InterruptsResumed", unit=MetricUnit.Count, value=1)
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=out)
    accepted = sessions.submit(store, queue, who, session_id, body)
    logger.append_keys(session_id=accepted.session_id)
    out = {"session_id": accepted.session_id, "turn_id": accepted.turn_id, "queued": accepted.queued}
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=out)


@app.post("/v1/sessions")
def create_session(body: Annotated[ClientInput, Body()]) -> Response[dict[str, Any]]:
    return _submit(None, body)


@app.post("/v1/sessions/<session_id>/inputs")
def post_input(session_id: str, body: Annotated[ClientInput, Body()]) -> Response[dict[str, Any]]:
    logger.append_keys(session_id=session_id)
    return _submit(check_id(session_id, f"session {session_id}"), body)


@app.get("/v1/sessions/<session_id>")
def get_session(session_id: str) -> dict[str, Any]:
    store, _, _ = deps()
    return sessions.view(store, caller(), check_id(session_id, f"session {session_id}"))


@app.get("/v1/sessions/<session_id>/events")
def get_events(
    session_id: str,
    after_seq: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> dict[str, Any]:
    store, _, _ = deps()
    return sessions.events(store, caller(), check_id(session_id, f"session {session_id}"), after_seq, limit)


@app.post("/v1/sessions/<session_id>/interrupts")
def post_interrupt(session_id: str, body: RaiseInterruptBody) -> dict[str, Any]:
    store, queue, _ = deps()
    out = sessions.raise_interrupt(
        store, queue, caller(), check_id(session_id, f"session {session_id}"), reason=body.reason,
        payload=body.payload, global_=body.global_, interrupt_id=body.interrupt_id, expires_in=body.expires_in,
        request_id=app.current_event.request_context.request_id)
    if not out["noop"]:
        metrics.add_metric(name="InterruptsRaised", unit=MetricUnit.Count, value=1)
    return out


@app.post("/v1/sessions/<session_id>/calls/settle")
def post_settle(session_id: str, body: SettleBody) -> dict[str, Any]:
    store, queue, _ = deps()
    return settle(store, queue, caller(), check_id(session_id, f"session {session_id}"), body)


@app.get("/v1/interrupts")
def get_inbox(
    status: Annotated[str, Query(pattern="^open$")] = "open",
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> dict[str, Any]:
    store, _, _ = deps()
    return sessions.inbox(store, caller(), limit, cursor)


# --- agents ----------------------------------------------------------------------------


@app.put("/v1/agents/<agent_id>")
def put_agent(agent_id: str, body: AgentConfig) -> dict[str, Any]:
    store, _, _ = deps()
    check_id(agent_id, f"agent {agent_id}")
    config = body.wire()
    worker = config.get("worker") or {}
    if worker.get("url"):
        problem = check_url(worker["url"])
        if problem:
            raise ApiError(400, "validation_error", problem, "worker.url")
    secret = worker.get("secret")
    if secret and not str(secret).startswith(("env:", "secretsmanager:")):
        raise ApiError(400, "validation_error", "worker.secret must be `env:NAME` or `secretsmanager:ARN`",
                       "worker.secret")
    store.put_agent(caller().tenant, agent_id, config)
    return {"agent_id": agent_id, "agent": config}


@app.get("/v1/agents/<agent_id>")
def get_agent(agent_id: str) -> dict[str, Any]:
    store, _, _ = deps()
    check_id(agent_id, f"agent {agent_id}")
    config = store.get_agent(caller().tenant, agent_id)
    if config is None:
        raise ApiError(404, "not_found", f"agent {agent_id} not found")
    return {"agent_id": agent_id, "agent": config}


@app.get("/v1/openapi.json")
def openapi() -> Response[dict[str, Any]]:
    schema = json.loads(app.get_openapi_json_schema(title="Holdpoint API", version="1.0.0"))
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=schema)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    body = event.get("body") or ""
    if len(body.encode() if isinstance(body, str) else body) > MAX_BODY_BYTES:
        return {"statusCode": 413, "headers": {"Content-Type": "application/json"},
                "body": json.dumps(ApiError(413, "payload_too_large",
                                            f"body is over {MAX_BODY_BYTES} bytes").body())}
    try:
        return app.resolve(event, context)
    except Exception:  # noqa: BLE001 - never a stack trace in a body
        logger.exception("unhandled")
        return {"statusCode": 500, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"error": {"code": "internal", "message": "internal error"}})}

