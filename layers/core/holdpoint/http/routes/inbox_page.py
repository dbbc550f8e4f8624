"""`GET /inbox`: the inbox page, a static HTML page with its script and style sheet, served without
credentials (they are the page itself, nothing of a tenant's); every call it makes for data carries
the signed-in caller's bearer token. A strict Content-Security-Policy allows only this origin's
script, style and API, and no inline script, so text from an interrupt can never run as code."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()

STATIC = Path(__file__).resolve().parent.parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-cache"}
FILES = {"inbox.html": "text/html; charset=utf-8", "inbox.js": "text/javascript; charset=utf-8",
         "inbox.css": "text/css; charset=utf-8"}


@cache
def _text(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def _file(name: str) -> Response[str]:
    return Response(status_code=200, content_type=FILES[name], body=_text(name), headers=dict(HEADERS))


def _documented(name: str) -> dict[int, Any]:
    """The one answer of a static file (no credentials: nothing of a tenant's is in it)."""
    return {200: {"description": name, "content": {FILES[name].split(";")[0]: {"schema": {"type": "string"}}}}}


@router.get("/inbox", summary="The inbox page (static HTML, no credentials)", responses=_documented("inbox.html"))
def inbox_page() -> Response[str]:
    return _file("inbox.html")


@router.get("/inbox/app.js", summary="The inbox page's script", responses=_documented("inbox.js"))
def inbox_script() -> Response[str]:
    return _file("inbox.js")


@router.get("/inbox/app.css", summary="The inbox page's style sheet", responses=_documented("inbox.css"))
def inbox_style() -> Response[str]:
    return _file("inbox.css")
