"""CORS as the template configures it (`CorsAllowedOrigins`): API Gateway answers preflights from
allowed origins and marks their answers; other origins get nothing a browser would accept. The
local front end does the same with the template's CorsConfiguration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests

APP = "http://app.example"


def test_allowed_origins_get_preflights_and_marked_answers_others_do_not(
        local_stack_factory: Callable[..., Any]) -> None:
    stack = local_stack_factory(cors_origins=[APP])
    url = f"{stack.base_url}/v1/interrupts"
    preflight = {"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
    ok = requests.options(url, headers={"Origin": APP, **preflight}, timeout=10)
    assert ok.status_code == 204 and ok.headers["access-control-allow-origin"] == APP
    assert "authorization" in ok.headers["access-control-allow-headers"]
    assert "GET" in ok.headers["access-control-allow-methods"]
    evil = requests.options(url, headers={"Origin": "http://evil.example", **preflight}, timeout=10)
    assert "access-control-allow-origin" not in evil.headers
    answer = requests.get(url, headers={"Origin": APP, **stack.auth_headers}, timeout=10)
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == APP
    other = requests.get(url, headers={"Origin": "http://evil.example", **stack.auth_headers}, timeout=10)
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


def test_no_origins_configured_means_no_cors(local_stack_factory: Callable[..., Any]) -> None:
    stack = local_stack_factory(cors_origins=[])
    url = f"{stack.base_url}/v1/interrupts"
    preflight = requests.options(url, headers={"Origin": APP, "Access-Control-Request-Method": "GET"}, timeout=10)
    assert preflight.status_code == 404 and "access-control-allow-origin" not in preflight.headers
