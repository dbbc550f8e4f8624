"""`GET /inbox`: the inbox page, a static HTML page with its script and style sheet, served without
credentials (they are the page itself, nothing of a tenant's); every call it makes for data carries
the signed-in caller's bearer token. A strict Content-Security-Policy allows only this origin's
script, style and API, and no inline script, so text from an interrupt can never run as code.

`GET /inbox/session?id=...` follows one session live over the WebSocket API: the same kind of page,
its CSP also allowing the WebSocket API's origin (`HOLDPOINT_LIVE_URL`), which `/inbox/live.json`
names for its script. The WebSocket's `$connect` authorizer checks the same bearer token (`?token=`).

`GET /inbox?tenant=T` signs a person in through the tenant's identity provider: `/inbox/sign-in.json`
names its endpoints and client id (public values: the console is a public client with no secret),
and the page's CSP also allows the token endpoint's origin."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import ID_PATTERN
from holdpoint.core.jsontypes import JsonObject

router = APIGatewayHttpRouter()

STATIC = Path(__file__).resolve().parent.parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-cache"}
FILES = {"inbox.html": "text/html; charset=utf-8", "inbox.js": "text/javascript; charset=utf-8",
         "inbox.css": "text/css; charset=utf-8", "session.html": "text/html; charset=utf-8",
         "session.js": "text/javascript; charset=utf-8", "favicon.svg": "image/svg+xml"}
LIVE_URL_ENV = "HOLDPOINT_LIVE_URL"
"""The WebSocket API's URL (`wss://.../live`, template.yaml); unset: no live page."""


@cache
def _text(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def _file(name: str, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(status_code=200, content_type=FILES[name], body=_text(name), headers=headers or dict(HEADERS))


def live_url() -> str | None:
    """The WebSocket API's URL if it is a ws(s) URL with a host (anything else: none)."""
    url = os.environ.get(LIVE_URL_ENV) or ""
    parts = urlsplit(url)
    return url if parts.scheme in ("wss", "ws") and parts.hostname and not parts.query else None


def _live_csp() -> dict[str, str]:
    """The session page's headers: connect-src also allows the WebSocket API's origin."""
    url = live_url()
    if url is None:
        return dict(HEADERS)
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    return {**HEADERS, "Content-Security-Policy": CSP.replace("connect-src 'self'", f"connect-src 'self' {origin}")}


def _documented(name: str) -> dict[int, Any]:
    """The one answer of a static file (no credentials: nothing of a tenant's is in it)."""
    return {200: {"description": name, "content": {FILES[name].split(";")[0]: {"schema": {"type": "string"}}}}}


@router.get("/", summary="The API's root: a redirect to the inbox page (no credentials)",
            responses={302: {"description": "to /inbox (`Location`)",
                             "content": {"text/plain": {"schema": {"type": "string"}}}}})
def root() -> Response[str]:
    """`/` leads somewhere a person can start: the approver's console."""
    return Response(status_code=302, content_type="text/plain; charset=utf-8", body="see /inbox\n",
                    headers={**HEADERS, "Location": "/inbox"})


@router.get("/inbox", summary="The inbox page (static HTML, no credentials)", responses=_documented("inbox.html"))
def inbox_page() -> Response[str]:
    """With `?tenant=T` whose identity provider names the console's endpoints, connect-src also
    allows its token endpoint's origin: the page exchanges the sign-in's code there."""
    sign_in = _sign_in(router.current_event.get_query_string_value("tenant"))
    if sign_in is None:
        return _file("inbox.html")
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(str(sign_in["token_endpoint"])))
    return _file("inbox.html", {**HEADERS, "Content-Security-Policy": CSP.replace(
        "connect-src 'self'", f"connect-src 'self' {origin}")})


def _sign_in(tenant: str | None) -> JsonObject | None:
    """A tenant's sign-in settings, or None (no such tenant, no provider, no endpoints)."""
    if not tenant or not ID_PATTERN.fullmatch(tenant):
        return None
    provider = assembly.get_store().identity_provider(tenant)
    return provider.sign_in() if provider is not None else None


@router.get("/inbox/sign-in.json", summary="A tenant's sign-in settings for the inbox page (no credentials)",
            responses={200: {"description": "`{issuer, client_id, authorization_endpoint, token_endpoint}`: "
                             "the tenant's identity provider, for the authorization code flow with PKCE",
                             "content": {"application/json": {"schema": {"type": "object"}}}},
                       404: {"description": "No such tenant, or its provider names no sign-in endpoints",
                             "content": {"application/json": {"schema": {"type": "object"}}}}})
def sign_in_config() -> Response[dict[str, Any]]:
    tenant = router.current_event.get_query_string_value("tenant")
    found = _sign_in(tenant)
    if found is None:
        raise Refusal("not_found", "no sign-in is declared for this tenant", "tenant")
    return Response(status_code=200, content_type="application/json", body=found, headers=dict(HEADERS))


@router.get("/inbox/app.js", summary="The inbox page's script", responses=_documented("inbox.js"))
def inbox_script() -> Response[str]:
    return _file("inbox.js")


@router.get("/inbox/app.css", summary="The inbox page's style sheet", responses=_documented("inbox.css"))
def inbox_style() -> Response[str]:
    return _file("inbox.css")


@router.get("/inbox/session", summary="The session page: one session followed live (static HTML, no credentials)",
            responses=_documented("session.html"))
def session_page() -> Response[str]:
    return _file("session.html", _live_csp())


@router.get("/inbox/session.js", summary="The session page's script", responses=_documented("session.js"))
def session_script() -> Response[str]:
    return _file("session.js")


@router.get("/favicon.ico", summary="The pages' icon (an SVG; no credentials)", responses=_documented("favicon.svg"))
def favicon() -> Response[str]:
    """Browsers ask every origin for `/favicon.ico`: answered, not a 404 in every page's console."""
    return _file("favicon.svg", {**HEADERS, "Cache-Control": "max-age=86400"})


@router.get("/inbox/live.json", summary="The WebSocket API's URL the session page connects to (no credentials)",
            responses={200: {"description": "`{\"url\": \"wss://...\"}` (null without a WebSocket API)",
                             "content": {"application/json": {"schema": {"type": "object"}}}}})
def live_config() -> Response[dict[str, Any]]:
    return Response(status_code=200, content_type="application/json", body={"url": live_url()},
                    headers=dict(HEADERS))
