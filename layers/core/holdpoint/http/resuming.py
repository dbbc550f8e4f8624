"""The resume request, shared by the resume function and the API function's documented route:
what a resume does once its body and ids are known to be well formed, and the resume function's
check of them against the body's one declaration (`bodies.ResumeBody`, as `resume_shape.py`
holds it: the same answers as the API function's OpenAPI validation, without pydantic)."""

from __future__ import annotations

import json
import re
from typing import Any

from aws_lambda_powertools.event_handler import Response

from holdpoint import assembly
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import next_step
from holdpoint.http import edge, rendering
from holdpoint.http.edge import short
from holdpoint.http.resolver import bad_path_id, error, param_of
from holdpoint.http.resume_shape import BULK_FIELDS, FIELDS, ITEM_FIELDS, ITEM_REQUIRED
from holdpoint.http.telemetry import count, logger
from holdpoint.services.bulk import Item, resume_all
from holdpoint.services.resume import resume

PATH = "/v1/sessions/<session_id>/interrupts/<interrupt_id>/resume"
BULK_PATH = "/v1/interrupts/resume"


def _field_problem(value: Any, shape: dict[str, int | str], required: bool = False) -> str | None:
    """pydantic's message for a value the field's shape refuses (None passes an optional one)."""
    if value is None and not required:
        return None
    if shape.get("type") == "string" and not isinstance(value, str):
        return "Input should be a valid string"
    if shape.get("type") == "object" and not isinstance(value, dict):
        return "Input should be a valid dictionary"
    if shape.get("type") == "array":
        return _list_problem(value, shape)
    bound = shape.get("maxLength")
    if isinstance(bound, int) and len(value) > bound:
        return f"String should have at most {bound} characters"
    pattern = shape.get("pattern")
    if isinstance(pattern, str) and not re.search(pattern, value):
        return f"String should match pattern '{pattern}'"
    return None


def _list_problem(value: Any, shape: dict[str, int | str]) -> str | None:
    """pydantic's message for a list its type or bounds refuse."""
    if not isinstance(value, list):
        return "Input should be a valid list"
    least, most = shape.get("minItems"), shape.get("maxItems")
    if isinstance(least, int) and len(value) < least:
        return f"List should have at least {least} item{'s' if least != 1 else ''} after validation, not {len(value)}"
    if isinstance(most, int) and len(value) > most:
        return f"List should have at most {most} items after validation, not {len(value)}"
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
    body = _json_object(body_text)
    if not isinstance(body, dict):
        return body
    problem = _object_problem(body, FIELDS, (), ())
    if problem is not None:
        return problem
    return bad_path_id("POST", "session_id", session_id) or bad_path_id("POST", "interrupt_id", interrupt_id)


def _json_object(body_text: str | None) -> dict[str, Any] | Response[dict[str, Any]]:
    """The body as a JSON object (strict JSON already, `resolver.prepare`), or the answer to one
    that is missing or not an object."""
    body = json.loads(body_text) if body_text else None
    if body is None:
        return error("validation_error", "a JSON object body is required", "body")
    if not isinstance(body, dict):
        return error("validation_error", "body must be a JSON object", "body")
    return body


def _object_problem(body: dict[str, Any], fields: dict[str, dict[str, int | str]], required: tuple[str, ...],
                    at: tuple[str | int, ...]) -> Response[dict[str, Any]] | None:
    """The first error pydantic reports for an object at `at`: each field's own (missing, then
    type and bounds), in the model's order, then its first unknown key."""
    for name, shape in fields.items():
        if name in required and name not in body:
            return error("validation_error", "Field required", short(param_of((*at, name))))
        problem = _field_problem(body.get(name), shape, name in required)
        if problem:
            return error("validation_error", problem, short(param_of((*at, name))))
        if shape.get("type") == "array" and name in body:
            listed = _items_problem(body[name], (*at, name))
            if listed is not None:
                return listed
    for key in body:  # after the fields' own errors, as pydantic reports them
        if key not in fields:
            param = short(param_of((*at, key)) or "body")
            return error("validation_error", next_step("extra_forbidden", param, "Extra inputs are not permitted"),
                         param)
    return None


def _items_problem(items: list[Any], at: tuple[str | int, ...]) -> Response[dict[str, Any]] | None:
    """The first error of a bulk answer's items, each an object of `ITEM_FIELDS`."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            param = short(param_of((*at, index)))
            return error("validation_error", next_step("model_type", param, "Input should be an object"), param)
        problem = _object_problem(item, ITEM_FIELDS, ITEM_REQUIRED, (*at, index))
        if problem is not None:
            return problem
    return None


def bulk_problem(body_text: str | None) -> Response[dict[str, Any]] | None:
    """The answer the API function's validation gives a malformed bulk answer, or None."""
    body = _json_object(body_text)
    if not isinstance(body, dict):
        return body
    return _object_problem(body, BULK_FIELDS, tuple(BULK_FIELDS), ())


def bulk_request(event: dict[str, Any], items: list[dict[str, Any]], context: Any) -> dict[str, Any]:
    """Each item as a single resume (`services.bulk`), once the list is known to be well formed:
    every payload within the single resume's bound (413 naming the item's field), each
    interrupt named once (400). Then 200 with each item's outcome, the list stopped where the
    Lambda `context` has too little time left for another item."""
    who = edge.caller(event)
    for index, item in enumerate(items):
        try:
            edge.check_payload(item.get("payload"))
        except Refusal as too_large:
            raise Refusal(too_large.code, too_large.message, f"items[{index}].payload") from None
    listed = [Item(i["session_id"], i["interrupt_id"], i.get("payload"), i.get("expect_fingerprint"),
                   i.get("comment"), i.get("arguments")) for i in items]
    outcomes = resume_all(assembly.get_store(), assembly.get_parking(), who, listed,
                          time_left=lambda: context.get_remaining_time_in_millis() / 1000)
    answered = sum(1 for o in outcomes if o.resumed is not None and not o.resumed.noop)
    logger.info("bulk resume", extra={"items": len(outcomes), "answered": answered})
    for _ in range(answered):
        count("InterruptsResumed")
    return rendering.bulk_answered(outcomes)
