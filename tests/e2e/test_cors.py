"""CORS as the template configures it (`CorsAllowedOrigins`): API Gateway answers preflights from
allowed origins and marks their answers; other origins get nothing a browser would accept. The
local front end does the same with the template's CorsConfiguration, and a page in a real headless
Chromium on an allowed origin reads the API while one on another origin is blocked."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser

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


class _Page(BaseHTTPRequestHandler):
    """Serves one empty page: the origin a browser's cross-origin call is made from."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        body = b"<!doctype html><title>app</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def pages() -> Iterator[tuple[str, str]]:
    """Two origins serving a page: the first is allowed by the stack, the second is not."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Page) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tuple(f"http://127.0.0.1:{s.server_address[1]}" for s in servers)  # type: ignore[misc]
    for server in servers:
        server.shutdown()
        server.server_close()


CALL = """async ([url, key]) => {
  try {
    const answer = await fetch(url, {headers: {Authorization: `Bearer ${key}`}});
    return {status: answer.status, body: await answer.json()};
  } catch (err) {
    return {blocked: String(err)};
  }
}"""


def test_a_page_on_an_allowed_origin_calls_the_api_from_a_real_browser(
        local_stack_factory: Callable[..., Any], browser: Browser, pages: tuple[str, str]) -> None:
    allowed, other = pages
    stack = local_stack_factory(cors_origins=[allowed])
    url = f"{stack.base_url}/v1/interrupts"
    tab = browser.new_context().new_page()
    tab.goto(allowed + "/")
    answer = tab.evaluate(CALL, [url, stack.api_key])  # a preflighted call: it sends Authorization
    assert answer["status"] == 200 and answer["body"]["interrupts"] == [], answer
    tab.goto(other + "/")
    refused = tab.evaluate(CALL, [url, stack.api_key])
    assert "blocked" in refused and "Failed to fetch" in refused["blocked"], refused
    tab.context.close()
