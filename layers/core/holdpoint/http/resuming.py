"""The resume request, shared by the resume function and the API function's documented route:
what a resume does once its body and ids are known to be well formed, and the resume function's
hand check of them (the same answers as the API function's OpenAPI validation, without pydantic)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response

from holdpoint import assembly
from holdpoint.core.approvals import MAX_COMMENT
from holdpoint.core.ids import next_step
from holdpoint.http import edge, rendering
from holdpoint.http.edge import short
from holdpoint.http.resolver import bad_path_id, error, param_of
from holdpoint.http.telemetry import count, logger
from holdpoint.services.resume import resume

PATH = "/v1/sessions/<session_id>/interrupts/<interrupt_id>/resume"
BODY_FIELDS = frozenset({"payload", "expect_fingerprint", "comment"})
"""`ResumeBody`'s fields: any other key is refused, as the model (extra="forbid") refuses it."""


def resume_request(event: dict[str, Any], session_id: str, interrupt_id: str, payload: Any,
                   expect_fingerprint: str | None = None, comment: str | None = None) -> dict[str, Any]:
    """One conditional write flips the interrupt, then one SendTaskSuccess (R7)."""
    who = edge.caller(event)
    edge.check_id(session_id, f"session {session_id}")
    edge.check_param_id(interrupt_id, "interrupt_id")
    logger.append_keys(session_id=session_id, interrupt_id=interrupt_id)
    out = resume(assembly.get_store(), assembly.get_parking(), who, session_id, interrupt_id,
                 edge.check_payload(payload), expect_fingerprint=expect_fingerprint, comment=comment)
    logger.info("resume", extra={"noop": out.noop})
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
    if not isinstance(body.get("expect_fingerprint", ""), str | None):
        return error("validation_error", "Input should be a valid string", "expect_fingerprint")
    if not isinstance(body.get("comment", ""), str | None):
        return error("validation_error", "Input should be a valid string", "comment")
    if len(body.get("comment") or "") > MAX_COMMENT:
        return error("validation_error", f"String should have at most {MAX_COMMENT} characters", "comment")
    for key in body:  # after the fields' own errors, as pydantic reports them
        if key not in BODY_FIELDS:
            param = short(param_of((key,)) or "body")
            return error("validation_error", next_step("extra_forbidden", param, "Extra inputs are not permitted"),
                         param)
    return bad_path_id("POST", "session_id", session_id) or bad_path_id("POST", "interrupt_id", interrupt_id)
