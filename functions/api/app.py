"""HTTP API handler: parse, call the core, shape the reply."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError
from pydantic import TypeAdapter, ValidationError

from holdpoint.aws import secretrefs, signing
from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import WorkQueue
from holdpoint.aws.store import Store, TooManyChanges
from holdpoint.core.errors import Code, Refusal
from holdpoint.core.protocol import (
    ID_REGEX,
    INPUT_TAGS,
    AgentConfig,
    ClientInput,
    Error,
    GatewayError,
    Id,
    InterruptResumeInput,
    NewSessionInput,
    RaiseInterruptBody,
    ResumeBody,
    SettleBody,
    error_param,
    first_error,
)
from holdpoint.http.edge import refusal_reply, status_of
from holdpoint.http.limits import MAX_PAYLOAD_BYTES, body_bytes, strict_body
from holdpoint.outbound import netguard
from holdpoint.outbound.workers import check_lambda_arn
from holdpoint.services import sessions
from holdpoint.services.auth import Caller
from holdpoint.services.resume import resume
from holdpoint.services.settle import settle

MAX_AGENT_BYTES = 131_072
"""An agent config is copied into the header of every session it starts, which must stay under 400 KB."""
ID: TypeAdapter[str] = TypeAdapter(Id)

logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child
metrics = Metrics(namespace="Holdpoint", service="api")
app = APIGatewayHttpResolver(enable_validation=True)
_deps: dict[str, Any] = {}


# --- the OpenAPI document: what each route really answers ------------------------------


BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
"""Every route but the OpenAPI document: an API key or token, checked by the Lambda authorizer."""
_WHY: dict[int, tuple[str, Any]] = {
    400: ("Invalid input; `param` names the field", Error),
    401: ("API Gateway: no Authorization header", GatewayError),
    403: ("API Gateway: the authorizer refused the credentials", GatewayError),
    404: ("Holdpoint: not found, or another tenant's; API Gateway: no route (an empty path id)",
          Error | GatewayError),
    409: ("The session's state refuses it now (`interrupted`, `turn_already_active`, `call_not_open`, "
          "`conflict`)", Error),
    413: ("Holdpoint: a body over 1 MiB or a payload too large to record; API Gateway: a body over 10 MiB",
          Error | GatewayError),
    422: ("Unknown input `type`", Error),
}


def answers(ok: int, *codes: int, holdpoint_403: bool = False) -> dict[int, OpenAPIResponse]:
    """The statuses a route can answer, each with the body it really has (Holdpoint's or API Gateway's)."""
    out: dict[int, OpenAPIResponse] = {ok: {"description": "Accepted" if ok == 202 else "OK"}}
    for code in (401, 403, *codes):
        text, model = _WHY[code]
        if code == 403 and holdpoint_403:
            text, model = text + "; Holdpoint: this caller may not resume that interrupt", Error | GatewayError
        out[code] = {"description": text, "content": {"application/json": {"model": model}}}
    return out


def id_path(what: str) -> Any:
    """A path id, documented with the pattern every stored id matches (a miss is answered in
    `on_validation_error` like the id itself would be: 404 unknown, or 400 where it names a new one)."""
    return Path(pattern=ID_REGEX, description=f"the {what} id")


def deps() -> tuple[Store, WorkQueue, Parking]:
    """Clients are built once per container, on first use (keeps cold start small)."""
    if not _deps:
        _deps["store"], _deps["queue"], _deps["parking"] = Store(), WorkQueue(), Parking()
    return _deps["store"], _deps["queue"], _deps["parking"]


def caller() -> Caller:
    ctx = (app.current_event.raw_event.get("requestContext") or {}).get("authorizer") or {}
    lam = ctx.get("lambda") or {}
    if not lam.get("tenant"):
        raise Refusal("unauthorized", "missing or invalid credentials")
    return Caller.from_context(lam)


def check_id(value: str, what: str) -> str:
    """An id that cannot exist is answered like an unknown one (404)."""
    try:
        ID.validate_python(value)
    except ValidationError:
        raise Refusal("not_found", f"{_short(what)} not found") from None
    return value


def check_payload(payload: Any) -> Any:
    """Refuse a payload too large to store with its interrupt (measured as stored: JSON, ASCII-escaped)."""
    if payload is not None and len(json.dumps(payload, separators=(",", ":"))) > MAX_PAYLOAD_BYTES:
        raise Refusal("payload_too_large", f"payload is over {MAX_PAYLOAD_BYTES} bytes as stored", "payload")
    return payload


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


_UNION_MEMBER = re.compile(r"^(constrained-)?(str|int|float|bool|bytes|none|list|dict)$|\[")


def _param(loc: tuple[Any, ...]) -> str:
    """`message.content`, not `message.content.constrained-str`: drop pydantic's union member tags."""
    parts = tuple(p for p in loc if not (isinstance(p, str) and _UNION_MEMBER.search(p)))
    return error_param(parts, INPUT_TAGS)


def respond(exc: Refusal) -> Response[dict[str, Any]]:
    return Response(status_code=status_of(exc), content_type=content_types.APPLICATION_JSON, body=exc.body())


def error(code: Code, message: str, param: str | None = None) -> Response[dict[str, Any]]:
    return respond(Refusal(code, message, param))


@app.exception_handler(Refusal)
def on_api_error(exc: Refusal) -> Response[dict[str, Any]]:
    logger.info("refused", extra={"code": exc.code, "status": status_of(exc)})
    return respond(exc)


_NAMING_IDS = {("PUT", "agent_id"): "agent_id must be 1-64 characters of [A-Za-z0-9._:-]",
               ("POST", "interrupt_id"): "interrupt_id is not a valid id"}
"""Path ids that name what the request creates or acts on: an invalid one is a 400, not an unknown one."""


def bad_path_id(name: str, value: Any) -> Response[dict[str, Any]] | None:
    """An invalid path id is answered like the id it would be: 404 unknown, or a 400 naming it."""
    try:
        ID.validate_python(value)
        return None
    except ValidationError:
        pass
    text = _NAMING_IDS.get((app.current_event.http_method, name))
    if text:
        return error("validation_error", text, name)
    return error("not_found", f"{name.removesuffix('_id')} {_short(str(value))} not found")


@app.exception_handler(RequestValidationError)
def on_validation_error(exc: RequestValidationError) -> Response[dict[str, Any]]:
    errors = list(exc.errors())
    in_body = [e for e in errors if tuple(e.get("loc") or ("",))[0] != "path"]
    if not in_body:  # only path ids are at fault
        for err in errors:
            refusal = bad_path_id(str(tuple(err.get("loc") or ("",))[-1]), err.get("input"))
            if refusal:
                return refusal
    err = (in_body or errors)[0]
    loc = tuple(err.get("loc") or ())
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    kind = err.get("type", "")
    if kind == "union_tag_invalid":
        tag = str((err.get("ctx") or {}).get("tag"))
        if tag in INPUT_TAGS:  # POST /v1/sessions takes only the inputs that start a session
            return error("validation_error", f"{_short(tag)} needs an existing session", "type")
        expected = re.findall(r"'([^']+)'", str((err.get("ctx") or {}).get("expected_tags")))
        return error("unknown_input_type", "unknown input type; expected one of " +
                     ", ".join(sorted(expected or INPUT_TAGS)), "type")
    if kind == "union_tag_not_found":
        return error("validation_error", "field required", "type")
    if kind == "json_invalid":
        return error("validation_error", "body is not valid JSON", "body")
    if kind in ("model_attributes_type", "dict_type", "model_type") and not loc:
        return error("validation_error", "body must be a JSON object", "body")
    if kind == "missing" and not loc:
        return error("validation_error", "a JSON object body is required", "body")
    param = _short(_param(loc) or "body")
    return error("validation_error", str(err.get("msg") or "invalid"), param)


@app.exception_handler(ValidationError)
def on_model_error(exc: ValidationError) -> Response[dict[str, Any]]:
    param, msg = first_error(exc)
    return error("validation_error", msg, param or "body")


@app.exception_handler(NotFoundError)
def on_no_route(exc: NotFoundError) -> Response[dict[str, Any]]:
    """API Gateway invokes this function only for its routes, so a miss here is an id holding a
    character the router does not match (`#`, `"`, `?`...): never a valid id, answered as one."""
    event = app.current_event
    for name, value in (event.path_parameters or {}).items():
        refusal = bad_path_id(name, value)
        if refusal:
            return refusal
    return error("not_found", f"no route {event.http_method} {_short(event.path)}")


@app.exception_handler(ClientError)
def on_client_error(exc: ClientError) -> Response[dict[str, Any]]:
    """DynamoDB refuses an item over 400 KB (or a transaction over 4 MB) and writes nothing."""
    err = exc.response.get("Error") or {}
    text = str(err.get("Message") or "").lower()
    if err.get("Code") == "ValidationException" and "size" in text and "exceeded" in text:
        return error("payload_too_large", "the input is too large to record")
    raise exc


def too_many_changes(exc: ValueError) -> Refusal | None:
    """The store refuses a step over DynamoDB's transaction item limit (nothing is written)."""
    if isinstance(exc, TooManyChanges):
        return Refusal("too_many_messages", "this input adds more messages than one request can record; "
                        "send them in smaller inputs", "messages")
    return None


# --- sessions and inputs -------------------------------------------------------------


def _submit(session_id: str | None, body: Any) -> Response[dict[str, Any]]:
    store, queue, parking = deps()
    who = caller()
    if isinstance(body, InterruptResumeInput):
        if session_id is None:
            raise Refusal("validation_error", "interrupt.resume needs an existing session", "type")
        out = resume(store, parking, who, session_id, body.interrupt_id, check_payload(body.payload))
        if not out["noop"]:
            metrics.add_metric(name="InterruptsResumed", unit=MetricUnit.Count, value=1)
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=out)
    if getattr(body, "type", None) in ("tool.result", "tool.error"):
        # Same as POST /calls/settle: settle a client or deferred call by id.
        if session_id is None:
            raise Refusal("validation_error", f"{body.type} needs an existing session", "type")
        settled = settle(store, queue, who, session_id, SettleBody.model_validate(body.wire()))
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=settled)
    try:
        accepted = sessions.submit(store, queue, who, session_id, body)
    except ValueError as exc:
        refusal = too_many_changes(exc)
        if refusal is None:
            raise
        raise refusal from None
    logger.append_keys(session_id=accepted.session_id)
    out = {"session_id": accepted.session_id, "turn_id": accepted.turn_id, "queued": accepted.queued}
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=out)


@app.post("/v1/sessions", status_code=202, security=BEARER, responses=answers(202, 400, 404, 409, 413, 422),
          summary="Start a session with a client input for a declared agent")
def create_session(body: Annotated[NewSessionInput, Body()]) -> Response[dict[str, Any]]:
    return _submit(None, body)


@app.post("/v1/sessions/<session_id>/inputs", status_code=202, security=BEARER,
          responses={**answers(202, 400, 404, 409, 413, 422, holdpoint_403=True),
                     200: {"description": "interrupt.resume, tool.result or tool.error: applied now"}},
          summary="Send a client input to a session")
def post_input(session_id: Annotated[str, id_path("session")],
               body: Annotated[ClientInput, Body()]) -> Response[dict[str, Any]]:
    logger.append_keys(session_id=session_id)
    return _submit(check_id(session_id, f"session {session_id}"), body)


@app.get("/v1/sessions/<session_id>", security=BEARER, responses=answers(200, 404),
         summary="The session at its head")
def get_session(session_id: Annotated[str, id_path("session")]) -> dict[str, Any]:
    store, _, _ = deps()
    return sessions.view(store, caller(), check_id(session_id, f"session {session_id}"))


@app.get("/v1/sessions/<session_id>/events", security=BEARER, responses=answers(200, 400, 404),
         summary="The session's event log, paged")
def get_events(
    session_id: Annotated[str, id_path("session")],
    after_seq: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> dict[str, Any]:
    store, _, _ = deps()
    return sessions.events(store, caller(), check_id(session_id, f"session {session_id}"), after_seq, limit)


@app.post("/v1/sessions/<session_id>/interrupts", security=BEARER, responses=answers(200, 400, 404, 409, 413),
          summary="Raise an interrupt at the head")
def post_interrupt(session_id: Annotated[str, id_path("session")], body: RaiseInterruptBody) -> dict[str, Any]:
    store, queue, _ = deps()
    out = sessions.raise_interrupt(
        store, queue, caller(), check_id(session_id, f"session {session_id}"), reason=body.reason,
        payload=check_payload(body.payload), global_=body.global_, interrupt_id=body.interrupt_id,
        expires_in=body.expires_in,
        request_id=app.current_event.request_context.request_id)
    if not out["noop"]:
        metrics.add_metric(name="InterruptsRaised", unit=MetricUnit.Count, value=1)
    return out


@app.post("/v1/sessions/<session_id>/interrupts/<interrupt_id>/resume", security=BEARER,
          responses=answers(200, 400, 404, 409, 413, holdpoint_403=True), summary="Resume an open interrupt")
def post_resume(session_id: Annotated[str, id_path("session")], interrupt_id: Annotated[str, id_path("interrupt")],
                body: ResumeBody) -> dict[str, Any]:
    """What the resume Lambda does (API Gateway routes this path there); declared here too so
    the OpenAPI document covers it."""
    store, _, parking = deps()
    who = caller()
    check_id(session_id, f"session {session_id}")
    try:
        ID.validate_python(interrupt_id)
    except ValidationError:
        raise Refusal("validation_error", "interrupt_id is not a valid id", "interrupt_id") from None
    out = resume(store, parking, who, session_id, interrupt_id, check_payload(body.payload))
    if not out["noop"]:
        metrics.add_metric(name="InterruptsResumed", unit=MetricUnit.Count, value=1)
    return out


@app.post("/v1/sessions/<session_id>/calls/settle", security=BEARER, responses=answers(200, 400, 404, 409, 413),
          summary="Settle a deferred or client call")
def post_settle(session_id: Annotated[str, id_path("session")], body: SettleBody) -> dict[str, Any]:
    store, queue, _ = deps()
    return settle(store, queue, caller(), check_id(session_id, f"session {session_id}"), body)


@app.get("/v1/interrupts", security=BEARER, responses=answers(200, 400),
         summary="The tenant's open interrupts, newest first")
def get_inbox(
    status: Annotated[str, Query(pattern="^open$")] = "open",
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> dict[str, Any]:
    store, _, _ = deps()
    return sessions.inbox(store, signing, caller(), limit, cursor)


# --- agents ----------------------------------------------------------------------------


def check_agent_targets(config: dict[str, Any], tenant: str) -> None:
    """Refuse what a tenant may not point the engine at: an in-process callable, a Lambda outside
    the allow-list, an internal URL, a secret that is not the tenant's (the engine re-checks each
    at call time; this answers the tenant with the field at fault and records nothing)."""
    worker = config.get("worker") or {}
    if "python" in worker:
        raise Refusal("validation_error", "worker.python names in-process workers registered in code; "
                       "declare worker.url or worker.lambda_arn", "worker.python")
    if worker.get("lambda_arn") is not None:
        problem = check_lambda_arn(worker["lambda_arn"])
        if problem:
            raise Refusal("validation_error", problem, "worker.lambda_arn")
    if worker.get("url") is not None:
        problem = netguard.check_url(worker["url"], "worker.url")
        if problem:
            raise Refusal("validation_error", problem, "worker.url")
    if worker.get("secret") is not None:
        problem = secretrefs.check(worker["secret"], tenant, "worker.secret")
        if problem:
            raise Refusal("validation_error", problem, "worker.secret")
    llm_config = config.get("llm") or {}
    if llm_config.get("base_url") is not None:
        problem = netguard.check_url(llm_config["base_url"], "llm.base_url")
        if problem:
            raise Refusal("validation_error", problem, "llm.base_url")
    if llm_config.get("api_key") is not None:
        problem = secretrefs.check(llm_config["api_key"], tenant, "llm.api_key")
        if problem:
            raise Refusal("validation_error", problem, "llm.api_key")


@app.put("/v1/agents/<agent_id>", security=BEARER, responses=answers(200, 400, 404, 413),
         summary="Declare an agent")
def put_agent(agent_id: Annotated[str, id_path("agent")], body: AgentConfig) -> dict[str, Any]:
    store, _, _ = deps()
    who = caller()
    who.require_key("declare agents")
    try:
        ID.validate_python(agent_id)
    except ValidationError:
        raise Refusal("validation_error", "agent_id must be 1-64 characters of [A-Za-z0-9._:-]",
                       "agent_id") from None
    config = body.wire()
    if len(json.dumps(config, separators=(",", ":"))) > MAX_AGENT_BYTES:
        raise Refusal("payload_too_large", f"the agent config is over {MAX_AGENT_BYTES} bytes")
    check_agent_targets(config, who.tenant)
    store.put_agent(who.tenant, agent_id, config)
    return {"agent_id": agent_id, "agent": config}


@app.get("/v1/agents/<agent_id>", security=BEARER, responses=answers(200, 404), summary="An agent's config")
def get_agent(agent_id: Annotated[str, id_path("agent")]) -> dict[str, Any]:
    store, _, _ = deps()
    who = caller()
    who.require_key("read agents")
    check_id(agent_id, f"agent {agent_id}")
    config = store.get_agent(who.tenant, agent_id)
    if config is None:
        raise Refusal("not_found", f"agent {agent_id} not found")
    return {"agent_id": agent_id, "agent": config}


@app.get("/v1/openapi.json", summary="This document (no credentials needed)")
def openapi() -> Response[dict[str, Any]]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_document())


def openapi_document() -> dict[str, Any]:
    """The document from the routes, less the 422 Powertools adds to every route: ours is declared
    per route (an unknown input `type`), and other validation errors are 400s."""
    doc: dict[str, Any] = json.loads(app.get_openapi_json_schema(
        title="Holdpoint API", version="1.0.0",
        security_schemes={"bearer": HTTPBearer(description="An API key (`hp_...`) or a token minted from one")}))
    for ops in doc["paths"].values():
        for op in ops.values():
            refusal = op["responses"].get("422", {}).get("content", {}).get("application/json", {})
            if refusal.get("schema", {}).get("$ref", "").endswith("/HTTPValidationError"):
                del op["responses"]["422"]
    text = json.dumps(doc["paths"])
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        if f"/{name}\"" not in text:
            doc["components"]["schemas"].pop(name, None)
    return doc


def check_body(event: dict[str, Any]) -> dict[str, Any]:
    """Size, encoding and nesting limits, then strict JSON, before the resolver parses the body
    (holdpoint.limits, holdpoint.strictjson): NaN, huge numbers, duplicate keys and lone
    surrogates are refused here, naming where they are."""
    raw = body_bytes(event)
    if raw:
        strict_body(raw)
    if event.get("isBase64Encoded"):
        event = {**event, "body": raw.decode("utf-8"), "isBase64Encoded": False}
    return event


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        event = check_body(event)
        # A JSON-only API: parse bodies as JSON whatever Content-Type says (curl -d sends a form type).
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        headers["content-type"] = "application/json"
        event = {**event, "headers": headers}
    except Refusal as exc:
        logger.info("refused", extra={"code": exc.code, "status": status_of(exc)})
        return refusal_reply(exc)
    try:
        return app.resolve(event, context)
    except Exception:  # noqa: BLE001 - never a stack trace in a body
        logger.exception("unhandled")
        return {"statusCode": 500, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"error": {"code": "internal", "message": "internal error"}})}

