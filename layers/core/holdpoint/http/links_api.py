"""The links function's resolver: `GET /v1/links/{token}` shows a confirmation page and changes
nothing (mail scanners and chat unfurlers open links on their own); `POST` with the page's form
resumes (`services.links`). No bearer credentials: the token is the credential, so API Gateway
runs no authorizer on these routes.

The page is tiny server-rendered HTML with no external assets under a strict Content-Security-
Policy, never cached, never framed, never sending the token on as a referrer. A POST whose
`Origin` (or `Sec-Fetch-Site`) says it came from another site is refused, and it must carry the
form's `confirm` field. A client that asks for JSON (`Accept: application/json`) gets JSON.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError

from holdpoint import assembly, tracing
from holdpoint.aws import signing
from holdpoint.core.errors import Refusal
from holdpoint.http import markup, rendering
from holdpoint.http.edge import INTERNAL_BODY, headers_of, load_refusal, status_of
from holdpoint.http.telemetry import logger, traced
from holdpoint.ports import Throttled, Unavailable
from holdpoint.services import links

PATH = "/v1/links/<token>"
MAX_FORM_BYTES = 4_096
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def _page(status: int, title: str, body: str) -> Response[str]:
    doc = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
           f"content=\"width=device-width\"><title>{html.escape(title)}</title></head><body>"
           f"<h1>{html.escape(title)}</h1>{body}</body></html>")
    return Response(status_code=status, content_type="text/html; charset=utf-8", body=doc, headers=dict(HEADERS))


def _json(status: int, body: Any) -> Response[str]:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body),
                    headers=dict(HEADERS))


def _wants_json(headers: dict[str, str]) -> bool:
    return "application/json" in headers.get("accept", "")


def _refused(exc: Refusal, as_json: bool) -> Response[str]:
    if as_json:
        out = _json(status_of(exc), exc.body())
    else:
        out = _page(status_of(exc), "This link cannot be used",
                    f"<p>{html.escape(exc.message)}</p><p><code>{html.escape(exc.code)}</code></p>")
    out.headers.update(headers_of(exc))
    return out


def _confirmation(view: dict[str, Any]) -> str:
    """What is asked and what the answer approves (the question, the tool and its arguments, as
    the console's card shows them), then the one button."""
    option = str(view["option"])
    parts = [f"<p>{html.escape(str(view.get('reason') or ''))}</p>"]
    if view.get("message_blocks"):
        parts.append(f"<div class=\"question\">{markup.blocks_html(view['message_blocks'])}</div>")
    elif view.get("summary"):
        parts.append(f"<pre>{html.escape(str(view['summary']))}</pre>")
    if view.get("action"):
        parts.append(markup.action_html(view["action"]))
    if view.get("expires_at") and view["status"] == "open":
        verb = markup.EXPIRY_VERBS.get(view.get("on_expiry") or "cancel", "closes")
        parts.append(f"<p>If no one answers, it {html.escape(verb)} at {html.escape(str(view['expires_at']))}.</p>")
    if view["status"] != "open":
        parts.append("<p>This request has already been answered; nothing more to do.</p>")
        return "".join(parts)
    parts.append(f"<p>You are answering as {html.escape(str(view['approver']))}.</p>"
                 f"<form method=\"post\"><input type=\"hidden\" name=\"confirm\" value=\"{html.escape(option)}\">"
                 f"<button type=\"submit\">{html.escape(str(view['label']))}</button></form>")
    return "".join(parts)


def _form(event: dict[str, Any]) -> dict[str, str]:
    raw = event.get("body") or ""
    data = base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode()
    if len(data) > MAX_FORM_BYTES:
        raise Refusal("payload_too_large", f"the form is over {MAX_FORM_BYTES} bytes", param="body")
    try:
        fields = parse_qs(data.decode("utf-8"), max_num_fields=8)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refusal("validation_error", "the body is not a form", param="body") from exc
    return {k: v[0] for k, v in fields.items()}


def _same_site(headers: dict[str, str]) -> None:
    """A browser says where a POST came from; the page's own form comes from this host."""
    origin = headers.get("origin")
    if headers.get("sec-fetch-site") == "cross-site" or (
            origin and origin != "null" and urlsplit(origin).netloc != headers.get("host")):
        raise Refusal("forbidden", "this form may only be sent from its own page", param="origin")


def build() -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(enable_validation=False)

    @app.get(PATH)
    def show_link(token: str) -> Response[str]:
        headers = {k.lower(): v for k, v in (app.current_event.headers or {}).items()}
        try:
            view = links.show(assembly.get_store(), signing, token)
        except Refusal as exc:
            return _refused(exc, _wants_json(headers))
        if _wants_json(headers):
            return _json(200, view)
        return _page(200, f"{view['label']}: answer this request?", _confirmation(view))

    @app.post(PATH)
    def follow_link(token: str) -> Response[str]:
        headers = {k.lower(): v for k, v in (app.current_event.headers or {}).items()}
        try:
            _same_site(headers)
            form = _form(app.current_event.raw_event)
            out = links.follow(assembly.get_store(), assembly.get_parking(), signing, token, form.get("confirm"))
        except Refusal as exc:
            return _refused(exc, _wants_json(headers))
        if _wants_json(headers):
            return _json(200, rendering.followed(out))
        done = "Already answered; nothing changed." if out.resumed.noop else "Thank you: your answer is recorded."
        return _page(200, "Done", f"<p>{html.escape(done)}</p>")

    @app.exception_handler(Throttled)
    @app.exception_handler(Unavailable)
    def on_aws_refusal(exc: Throttled | Unavailable) -> Response[str]:
        """AWS refused a call after its client's retries: 503 with `Retry-After`."""
        headers = {k.lower(): v for k, v in (app.current_event.headers or {}).items()}
        return _refused(load_refusal(exc), _wants_json(headers))

    @app.exception_handler(NotFoundError)
    def unroutable(exc: NotFoundError) -> Response[str]:
        """API Gateway sends only its link routes here, so a miss is a token holding a character
        the router does not match (`"`, `#`...): never a token this deployment sealed."""
        headers = {k.lower(): v for k, v in (app.current_event.headers or {}).items()}
        return _refused(Refusal("invalid_link", "this link is not valid: it was altered or never issued",
                                param="token"), _wants_json(headers))

    return app


def handler_for(app: APIGatewayHttpResolver) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler: never a stack trace in a body; each request a hop (holdpoint/tracing.py)."""

    @logger.inject_lambda_context(clear_state=True)
    @tracing.capture
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return traced("links", event, lambda: answer(event, context))

    def answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return app.resolve(event, context)
        except Exception:  # noqa: BLE001 - never a stack trace in a body
            logger.exception("unhandled")
            return {"statusCode": 500, "headers": {"Content-Type": "application/json"},
                    "body": json.dumps(INTERNAL_BODY)}

    return handler
