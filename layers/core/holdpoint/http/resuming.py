"""The resume request, shared by the resume function and the API function's documented route:
what a resume does once its body and ids are known to be well formed, and the resume function's
check of them against the body's one declaration (`bodies.ResumeBody`, as `resume_shape.py`
holds it: the same answers as the API function's OpenAPI validation, without pydantic)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response

from holdpoint import assembly
from holdpoint.core.ids import next_step
from holdpoint.http import edge, rendering
from holdpoint.http.edge import short
from holdpoint.http.resolver import bad_path_id, error, param_of
from holdpoint.http.resume_shape import FIELDS
from holdpoint.http.telemetry import count, logger
from holdpoint.services.resume import resume

PATH = "/v1/sessions/<session_id>/interrupts/<interrupt_id>/resume"


def _field_problem(value: Any, shape: dict[str, int | str]) -> str | None:
    """pydantic's message for a value the field's shape refuses (None passes: each is optional)."""
    if value is None:
        return None
    if shape.get("type") == "string" and not isinstance(value, str):
        return "Input should be a valid string"
    if shape.get("type") == "object" and not isinstance(value, dict):
        return "Input should be a valid dictionary"
    bound = shape.get("maxLength")
    if isinstance(bound, int) and len(value) > bound:
        return f"String should have at most {bound} characters"
    return None


def resume_request(event: dict[str, Any], session_id: str, interrupt_id: str, payload: Any,
                   expect_fingerprint: str | None = None, comment: str | None = None,
                   arguments: Any = None) -> dict[str, Any]:
    """One conditional write flips the interrupt, then one SendTaskSuccess (R7); `arguments` edit
    the bound action (A3)."""
    who = edge.caller(event)
    edge.check_id(session_id, f"session {session_id}")
    edge.check_param_id(interrupt_id, "interrupt_id")
    logger.append_keys(session_id=session_id, interrupt_id=interrupt_id)
    out = resume(assembly.get_store(), assembly.get_parking(), who, session_id, interrupt_id,
                 edge.check_payload(payload), expect_fingerprint=expect_fingerprint, comment=comment,
                 arguments=arguments)
    logger.info("resume", extra={"noop": out.noop, "edited": out.edited is not None})
    if not out.noop:
        count("InterruptsResumed")
    return rendering.resumed(out)


def request_problem(body_text: str | None, session_id: str, interrupt_id: str) -> Response[dict[str, Any]] | None:
    """The answer the API function's validation gives a malformed resume, or None: a body error
    first (a missing or non-object body, a non-string `expect_fingerprint`, then its first unknown
    key), then the ids in path order."""
    body = json.loads(body_text) if body_text else None  # strict JSON already (resolver.prepare)
    if body is None:
        return error("validation_error", "a JSON object body is required", "body")
    if not isinstance(body, dict):
        return error("validation_error", "body must be a JSON object", "body")
    for name, shape in FIELDS.items():  # each field's own errors, in the model's order, as pydantic's
        problem = _field_problem(body.get(name), shape)
        if problem:
            return error("validation_error", problem, name)
    for key in body:  # after the fields' own errors, as pydantic reports them
        if key not in FIELDS:
            param = short(param_of((key,)) or "body")
            return error("validation_error", next_step("extra_forbidden", param, "Extra inputs are not permitted"),
                         param)
    return bad_path_id("POST", "session_id", session_id) or bad_path_id("POST", "interrupt_id", interrupt_id)
