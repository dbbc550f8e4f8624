"""Resume Lambda: one conditional write flips the interrupt, then one SendTaskSuccess (R7)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError
from pydantic import TypeAdapter, ValidationError

from holdpoint.aws.parking import Parking
from holdpoint.aws.store import Store
from holdpoint.core.errors import Refusal
from holdpoint.core.protocol import Id, ResumeBody, first_error
from holdpoint.http.edge import refusal_reply, status_of
from holdpoint.http.limits import MAX_PAYLOAD_BYTES, object_body
from holdpoint.services.auth import Caller
from holdpoint.services.resume import resume

ID: TypeAdapter[str] = TypeAdapter(Id)

logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child
metrics = Metrics(namespace="Holdpoint", service="resume")
_deps: dict[str, Any] = {}


def _reply(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def _parse(event: dict[str, Any]) -> tuple[Caller, str, str, Any]:
    lam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda") or {}
    if not lam.get("tenant"):
        raise Refusal("unauthorized", "missing or invalid credentials")
    params = event.get("pathParameters") or {}
    session_id, interrupt_id = params.get("session_id", ""), params.get("interrupt_id", "")
    try:
        ID.validate_python(session_id)
    except ValidationError:
        raise Refusal("not_found", f"session {str(session_id)[:100]} not found") from None
    try:
        ID.validate_python(interrupt_id)
    except ValidationError:
        raise Refusal("validation_error", "interrupt_id is not a valid id", "interrupt_id") from None
    try:
        body = ResumeBody.model_validate(object_body(event))
    except ValidationError as exc:
        param, msg = first_error(exc)
        raise Refusal("validation_error", msg, param or "body") from None
    stored = len(json.dumps(body.payload, separators=(",", ":"))) if body.payload is not None else 0
    if stored > MAX_PAYLOAD_BYTES:
        raise Refusal("payload_too_large", f"payload is over {MAX_PAYLOAD_BYTES} bytes as stored", "payload")
    return Caller.from_context(lam), session_id, interrupt_id, body.payload


def _too_big(exc: ClientError) -> bool:
    """DynamoDB refused an item over 400 KB (the resume payload is stored on the interrupt); nothing was written."""
    err = exc.response.get("Error") or {}
    text = str(err.get("Message") or "").lower()
    return err.get("Code") == "ValidationException" and "size" in text and "exceeded" in text


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        who, session_id, interrupt_id, payload = _parse(event)
        logger.append_keys(session_id=session_id, interrupt_id=interrupt_id)
        if not _deps:
            _deps["store"], _deps["parking"] = Store(), Parking()
        out = resume(_deps["store"], _deps["parking"], who, session_id, interrupt_id, payload)
    except Refusal as exc:
        logger.info("refused", extra={"code": exc.code, "status": status_of(exc)})
        return refusal_reply(exc)
    except ClientError as exc:
        if not _too_big(exc):
            logger.exception("unhandled")
            return _reply(500, {"error": {"code": "internal", "message": "internal error"}})
        return _reply(413, {"error": {"code": "payload_too_large",
                                      "message": "the resume payload is too large to record"}})
    except Exception:  # noqa: BLE001 - never a stack trace in a body
        logger.exception("unhandled")
        return _reply(500, {"error": {"code": "internal", "message": "internal error"}})
    logger.info("resume", extra={"noop": out["noop"]})
    if not out["noop"]:
        metrics.add_metric(name="InterruptsResumed", unit=MetricUnit.Count, value=1)
    return _reply(200, out)
