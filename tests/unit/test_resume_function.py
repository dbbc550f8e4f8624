"""The resume function serves its route without Powertools' OpenAPI validation (so it loads no
pydantic); the API function declares the same route, validated, for its OpenAPI document. Every
malformed resume gets the same answer from both."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from holdpoint.core.ids import ID_PATTERN
from tests.unit.test_api import API, CONTEXT, RESUME, http_event, parse

BODIES = [None, "", "  ", "null", "[]", '"text"', "1", "true", "{}", '{"payload": null}',
          '{"payload": {"a": 1}, "x": 2}', '{"x": 1}', '{"x": 1, "y": 2}', '{"str": 1}', '{"a.b": 1}',
          '{"[0]": 1}', '{"function-x": 1}',
          '{"' + "k" * 150 + '": 1}', '{"Payload": 1}', "{", '{"payload": NaN}',
          '{"expect_fingerprint": 1}', '{"expect_fingerprint": []}', '{"expect_fingerprint": {}}',
          '{"expect_fingerprint": true}', '{"expect_fingerprint": 1, "x": 2}', '{"x": 2, "expect_fingerprint": 1}',
          '{"payload": 1, "expect_fingerprint": 1.5}']
IDS = ["ses-1", "-dash", "a" * 65, "x:y.z", "has space", "é"]


def _answer(handler: Any, session_id: str, interrupt_id: str, raw: str | None, tenant: str | None) -> tuple[int, Any]:
    event = http_event("POST", f"/v1/sessions/{session_id}/interrupts/{interrupt_id}/resume", raw_body=raw,
                       route_key="POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume",
                       path_params={"session_id": session_id, "interrupt_id": interrupt_id}, tenant=tenant)
    return parse(handler.handler(event, CONTEXT))


def _reaches_storage(session_id: str, interrupt_id: str, raw: str | None, tenant: str | None) -> bool:
    ids_ok = all(ID_PATTERN.fullmatch(i) for i in (session_id, interrupt_id))
    return bool(tenant) and raw in ("{}", '{"payload": null}') and ids_ok


@pytest.mark.parametrize("tenant", ["dev", None])
def test_the_resume_function_answers_malformed_requests_as_the_api_function_does(tenant: str | None) -> None:
    compared = 0
    for raw, session_id, interrupt_id in itertools.product(BODIES, IDS, IDS):
        if _reaches_storage(session_id, interrupt_id, raw, tenant):
            continue
        api = _answer(API, session_id, interrupt_id, raw, tenant)
        resume = _answer(RESUME, session_id, interrupt_id, raw, tenant)
        assert resume == api, (raw, session_id, interrupt_id)
        assert 400 <= api[0] < 500, api
        compared += 1
    assert compared > 600


def test_the_resume_functions_check_is_made_from_the_one_declaration_of_the_body() -> None:
    """`http/resume_shape.py`, which the resume function checks a body against, is what
    `ResumeBody` makes (`make resume-shape` writes it): the body is declared once."""
    from pathlib import Path

    from holdpoint.http import resume_shape
    from holdpoint.http.bodies import resume_shape_module

    assert Path(resume_shape.__file__).read_text() == resume_shape_module(), "run `make resume-shape`"
