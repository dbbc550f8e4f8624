"""The API function serves the inbox page and its assets without credentials, under a strict
Content-Security-Policy; the data routes still need the authorizer's caller."""

from __future__ import annotations

import re

import pytest

from tests.unit.test_api import API, CONTEXT, http_event, parse


@pytest.mark.parametrize(("path", "kind"), [("/inbox", "text/html"), ("/inbox/app.js", "text/javascript"),
                                            ("/inbox/app.css", "text/css"), ("/inbox/session", "text/html"),
                                            ("/inbox/session.js", "text/javascript")])
def test_inbox_page_is_served_without_a_caller_under_a_strict_csp(path: str, kind: str) -> None:
    reply = API.handler(http_event("GET", path, tenant=None), CONTEXT)
    headers = {k.lower(): v for k, v in reply["headers"].items()}
    assert reply["statusCode"] == 200 and headers["content-type"].startswith(kind)
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert reply["body"].strip()


@pytest.mark.parametrize(("page", "script_paths"), [("/inbox", ["/inbox/app.js"]),
                                                    ("/inbox/session", ["/inbox/app.js", "/inbox/session.js"])])
def test_inbox_page_has_no_inline_script_and_writes_no_markup(page: str, script_paths: list[str]) -> None:
    """The session page loads the inbox's script first: it holds the answer form both pages use."""
    html = API.handler(http_event("GET", page, tenant=None), CONTEXT)["body"]
    assert re.findall(r"<script[^>]*>", html) == [f'<script src="{path}" defer>' for path in script_paths]
    assert not re.search(r"\son[a-z]+\s*=", html) and "style=" not in html  # no inline handlers or styles
    for path in script_paths:
        script = API.handler(http_event("GET", path, tenant=None), CONTEXT)["body"]
        assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "eval(" not in script
        assert "outerHTML" not in script and "document.write" not in script


def test_inbox_data_still_needs_a_caller() -> None:
    status, body = parse(API.handler(http_event("GET", "/v1/interrupts", tenant=None), CONTEXT))
    assert status == 401 and body["error"]["code"] == "unauthorized"


def test_inbox_session_page_may_connect_only_to_the_websocket_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session page's CSP adds the WebSocket API's origin to connect-src, and `/inbox/live.json`
    names its URL; a value that is not a ws(s) URL names nothing."""
    monkeypatch.setenv("HOLDPOINT_LIVE_URL", "wss://abc.execute-api.eu-west-1.amazonaws.com/live")
    reply = API.handler(http_event("GET", "/inbox/session", tenant=None), CONTEXT)
    csp = {k.lower(): v for k, v in reply["headers"].items()}["content-security-policy"]
    assert "connect-src 'self' wss://abc.execute-api.eu-west-1.amazonaws.com;" in csp
    assert parse(API.handler(http_event("GET", "/inbox/live.json", tenant=None), CONTEXT)) == (
        200, {"url": "wss://abc.execute-api.eu-west-1.amazonaws.com/live"})
    for bad in ("https://evil.example/live", "wss://x.example/live?a=1", "javascript:alert(1)"):
        monkeypatch.setenv("HOLDPOINT_LIVE_URL", bad)
        assert parse(API.handler(http_event("GET", "/inbox/live.json", tenant=None), CONTEXT)) == (200, {"url": None})
        reply = API.handler(http_event("GET", "/inbox/session", tenant=None), CONTEXT)
        assert "connect-src 'self';" in {k.lower(): v for k, v in reply["headers"].items()}["content-security-policy"]


def test_the_root_leads_to_the_inbox() -> None:
    """Issue 32: `/` answered a bare 404; it now sends a person to the approver's console."""
    reply = API.handler(http_event("GET", "/", tenant=None), CONTEXT)
    headers = {k.lower(): v for k, v in reply["headers"].items()}
    assert reply["statusCode"] == 302 and headers["location"] == "/inbox"
