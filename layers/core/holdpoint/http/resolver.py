"""The Powertools resolver every HTTP handler uses, with one mapping of every failure to an answer:
refusals to their status, validation errors to a 400 naming the field, an impossible path id to
the answer the id itself would get, the store's size refusal to 413, AWS's refusals about load
(`Throttled`, `Unavailable`) to 503 with `Retry-After`, anything else to a bare 500."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from holdpoint import tracing
from holdpoint.coldstart import Deferred
from holdpoint.core.errors import Code, Refusal
from holdpoint.core.ids import ACTION_TAGS, ID_PATTERN, INPUT_TAGS, error_param, first_error, next_step
from holdpoint.core.jsontypes import JsonObject
from holdpoint.http.edge import (
    INTERNAL_BODY,
    door_refusal,
    headers_of,
    json_reply,
    load_refusal,
    refusal_reply,
    short,
    status_of,
)
from holdpoint.http.limits import body_bytes, strict_body
from holdpoint.http.telemetry import logger, metrics, traced
from holdpoint.ports import Throttled, TooLarge, TooManyChanges, Unavailable

if TYPE_CHECKING:  # pydantic is not loaded where validation is off (the resume function)
    from pydantic_core import ErrorDetails

_UNION_MEMBER = re.compile(r"^(constrained-)?(str|int|float|bool|bytes|none|list|dict)$|\[")
_NAMING_IDS = {("PUT", "agent_id"): "agent_id must be 1-64 characters of [A-Za-z0-9._:-]",
               ("POST", "interrupt_id"): "interrupt_id is not a valid id"}
"""Path ids that name what the request creates or acts on: an invalid one is a 400, not an unknown one."""


def respond(refusal: Refusal) -> Response[JsonObject]:
    return Response(status_code=status_of(refusal), content_type=content_types.APPLICATION_JSON,
                    body=refusal.body(), headers=headers_of(refusal) or None)


def error(code: Code, message: str, param: str | None = None) -> Response[JsonObject]:
    return respond(Refusal(code, message, param))


def param_of(loc: tuple[Any, ...]) -> str:
    """`message.content`, not `message.content.constrained-str`: drop pydantic's union member tags."""
    parts = tuple(p for p in loc if not (isinstance(p, str) and _UNION_MEMBER.search(p)))
    return error_param(parts, INPUT_TAGS | ACTION_TAGS)  # a worker's submit carries actions


def bad_path_id(method: str, name: str, value: Any) -> Response[JsonObject] | None:
    """An invalid path id is answered like the id it would be: 404 unknown, or a 400 naming it."""
    if isinstance(value, str) and ID_PATTERN.fullmatch(value):
        return None
    text = _NAMING_IDS.get((method, name))
    if text:
        return error("validation_error", text, name)
    return error("not_found", f"{name.removesuffix('_id')} {short(str(value))} not found")


def validation_answer(method: str, exc: RequestValidationError) -> Response[JsonObject]:
    """A request that does not fit a route's declared shape: 400 naming the field (or the id)."""
    errors = list(exc.errors())
    in_body = [e for e in errors if tuple(e.get("loc") or ("",))[0] != "path"]
    if not in_body:  # only path ids are at fault
        for err in errors:
            refusal = bad_path_id(method, str(tuple(err.get("loc") or ("",))[-1]), err.get("input"))
            if refusal:
                return refusal
    err = (in_body or errors)[0]
    loc = tuple(err.get("loc") or ())
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    return _field_error(str(err.get("type", "")), loc, err)


def _field_error(kind: str, loc: tuple[Any, ...], err: ErrorDetails) -> Response[JsonObject]:
    if kind == "union_tag_invalid":
        tag = str((err.get("ctx") or {}).get("tag"))
        if tag in INPUT_TAGS:  # POST /v1/sessions takes only the inputs that start a session
            return error("validation_error", f"{short(tag)} needs an existing session", "type")
        expected = re.findall(r"'([^']+)'", str((err.get("ctx") or {}).get("expected_tags")))
        if param_of(loc):  # a nested union (a submit's `actions[i]`): a field like any other
            return error("validation_error", f"unknown type {short(tag)}; expected one of " +
                         ", ".join(sorted(expected)), f"{param_of(loc)}.type")
        return error("unknown_input_type", "unknown input type; expected one of " +
                     ", ".join(sorted(expected or INPUT_TAGS)), "type")
    whole_body = {
        "union_tag_not_found": ("field required", "type"),
        "json_invalid": ("body is not valid JSON", "body"),
    }
    if kind in whole_body:
        message, param = whole_body[kind]
        return error("validation_error", message, param)
    if kind in ("model_attributes_type", "dict_type", "model_type") and not loc:
        return error("validation_error", "body must be a JSON object", "body")
    if kind == "missing" and not loc:
        return error("validation_error", "a JSON object body is required", "body")
    param = short(param_of(loc) or "body")
    return error("validation_error", next_step(kind, param, str(err.get("msg") or "invalid")), param)


def new_resolver(validate: bool = True) -> APIGatewayHttpResolver:
    """A resolver with the shared failure answers installed. Each execution environment builds
    its own: Powertools keeps a request's routing state on the resolver, so one resolver serves
    one request at a time. `validate=False` leaves out Powertools' OpenAPI validation and with it
    pydantic (~50 ms of a cold start): for the resume function, which checks its one body by hand."""
    app = APIGatewayHttpResolver(enable_validation=validate)

    @app.exception_handler(Refusal)
    def on_refusal(exc: Refusal) -> Response[JsonObject]:
        logger.info("refused", extra={"code": exc.code, "status": status_of(exc)})
        return respond(exc)

    if validate:
        _answer_validation_errors(app)

    @app.exception_handler(NotFoundError)
    def on_no_route(exc: NotFoundError) -> Response[JsonObject]:
        """API Gateway invokes a function only for its routes, so a miss here is an id holding a
        character the router does not match (`#`, `"`, `?`...): never a valid id, answered as one."""
        event = app.current_event
        for name, value in (event.path_parameters or {}).items():
            refusal = bad_path_id(event.http_method, name, value)
            if refusal:
                return refusal
        return error("not_found", f"no route {event.http_method} {short(event.path)}")

    @app.exception_handler(TooManyChanges)
    def on_too_many_changes(exc: TooManyChanges) -> Response[JsonObject]:
        """One input would change more items than one transaction holds; nothing was written."""
        return error("too_many_messages", "this input adds more messages than one request can record; "
                     "send them in smaller inputs", "messages")

    @app.exception_handler(TooLarge)
    def on_too_large(exc: TooLarge) -> Response[JsonObject]:
        """The store refused a record over its size limit (an item over 400 KB) and wrote nothing."""
        return error("payload_too_large", "the input is too large to record (a record is at most 400 KB); send "
                     "smaller messages, or large content by reference")

    @app.exception_handler(Throttled)
    @app.exception_handler(Unavailable)
    def on_aws_refusal(exc: Throttled | Unavailable) -> Response[JsonObject]:
        """AWS refused a call after its client's retries: 503 with `Retry-After`, never a bare 500."""
        refusal = load_refusal(exc)
        logger.warning("aws refused", extra={"code": refusal.code, "error": f"{type(exc).__name__}: {exc}"})
        return respond(refusal)

    return app


def _answer_validation_errors(app: APIGatewayHttpResolver) -> None:
    """A request that does not fit a route's declared shape, or a model a route builds: a 400."""
    from pydantic import ValidationError

    @app.exception_handler(RequestValidationError)
    def on_validation_error(exc: RequestValidationError) -> Response[JsonObject]:
        return validation_answer(app.current_event.http_method, exc)

    @app.exception_handler(ValidationError)
    def on_model_error(exc: ValidationError) -> Response[JsonObject]:
        param, msg = first_error(exc)
        return error("validation_error", msg, param or "body")


def prepare(event: JsonObject, json_body: bool = True) -> JsonObject:
    """Size, encoding and nesting limits, then strict JSON (holdpoint.http.limits), before the
    resolver parses the body; and a JSON-only API parses bodies as JSON whatever Content-Type
    says (curl -d sends a form type). `json_body=False` (Slack's form-encoded interactions) keeps
    the limits and the decoded body as sent, for its signature."""
    raw = body_bytes(event)
    if not raw.strip():  # whitespace is no body: "a JSON object body is required"
        event = {**event, "body": None, "isBase64Encoded": False}
    elif json_body:
        strict_body(raw)
    else:
        event = {**event, "body": raw.decode("utf-8"), "isBase64Encoded": False}
        return event
    if event.get("isBase64Encoded"):
        event = {**event, "body": raw.decode("utf-8"), "isBase64Encoded": False}
    sent = event.get("headers") or {}
    headers: JsonObject = {k.lower(): v for k, v in sent.items()} if isinstance(sent, dict) else {}
    headers["content-type"] = "application/json"
    raw_path = event.get("rawPath")
    if isinstance(raw_path, str) and "%" in raw_path:
        event = {**event, "rawPath": decoded_path(raw_path)}
    return {**event, "headers": headers}


def decoded_path(raw_path: str) -> str:
    """The path with each segment that percent-decodes to a valid id decoded, as API Gateway
    decodes `pathParameters` (Powertools matches routes on the raw path, so `int%3A1` would not
    be the id `int:1`); any other segment is left as sent, so it is answered as before."""
    out = []
    for segment in raw_path.split("/"):
        text = unquote(segment)
        out.append(text if ID_PATTERN.fullmatch(text) else segment)
    return "/".join(out)


def serve(app: APIGatewayHttpResolver, event: JsonObject, context: Any, json_body: bool = True) -> JsonObject:
    """One request through `app`: refused early if its caller may not make it (`edge.door_refusal`)
    or its body is bad; never a stack trace in a body."""
    try:
        refused = door_refusal(event)
        if refused is not None:
            raise refused
        event = prepare(event, json_body)
    except Refusal as exc:
        logger.info("refused", extra={"code": exc.code, "status": status_of(exc)})
        return refusal_reply(exc)
    try:
        return app.resolve(event, context)
    except Exception:  # noqa: BLE001 - never a stack trace in a body
        logger.exception("unhandled")
        return json_reply(500, INTERNAL_BODY)


def handler_for(app: APIGatewayHttpResolver | Deferred[APIGatewayHttpResolver],
                json_body: bool = True, hop: str = "api") -> Callable[[JsonObject, Any], JsonObject]:
    """The Lambda handler serving `app`, with Powertools' logging context, metrics and tracer, each
    request one hop named `hop` of its session's trace (holdpoint/tracing.py); a deferred `app` is
    built by the first request."""

    @metrics.log_metrics
    @logger.inject_lambda_context(clear_state=True)
    @tracing.capture
    def handler(event: JsonObject, context: Any) -> JsonObject:
        return traced(hop, event, lambda: serve(app.get() if isinstance(app, Deferred) else app, event, context,
                                                json_body))

    return handler
