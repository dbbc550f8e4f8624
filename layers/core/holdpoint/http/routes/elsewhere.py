"""The routes API Gateway sends to other functions, declared here for the one OpenAPI document:
the one-click links (the links function, holdpoint.http.links_api) and Slack's interactions (the
channels function, holdpoint.http.routes.channels). Those functions parse their bodies by hand
(a form, a signed form) without Powertools' validation, so their shapes are stated here. The API
function includes this router only when it builds the document, never to serve a request; these
functions are never called."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Form, Header, Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint.core.sealing import MAX_TOKEN_CHARS
from holdpoint.http.openapi import refusal

router = APIGatewayHttpRouter()

LINK = "/v1/links/<token>"
SLACK = "/v1/channels/slack/interactions"
SEALED = r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"
"""A token this deployment sealed (holdpoint.aws.signing): whether it did is checked, not stated."""
_HTML: dict[str, Any] = {"text/html": {"schema": {"type": "string", "description": "a small HTML page"}}}
_ANSWERED_FIELDS: dict[str, Any] = {"ok": {"type": "boolean"}, "interrupt_id": {"type": "string"},
                                    "noop": {"type": "boolean"}}
_ANSWERED = {"type": "object", "required": ["ok", "interrupt_id", "noop"], "properties": _ANSWERED_FIELDS}
_LINK_VIEW = {"type": "object", "required": ["option", "label", "approver", "status", "interrupt_id", "session_id"],
              "properties": {name: {"type": "string"} for name in
                             ("option", "label", "approver", "status", "interrupt_id", "session_id")}
              | {"reason": {"type": ["string", "null"]}, "summary": {"type": ["string", "null"]}}}
_LINK_DONE = {"type": "object", "required": ["ok", "interrupt_id", "noop", "option"],
              "properties": {**_ANSWERED_FIELDS, "option": {"type": "string"}}}


_OWN = {401: "The Slack request signature (or its timestamp, ASCII digits) is not valid", 410: "The link has expired",
        403: "Holdpoint: another site's form (`Origin`, `Sec-Fetch-Site`), an unmapped Slack user, or an approver "
             "the interrupt's approval does not admit"}
"""What the refusals of these routes mean where they are Holdpoint's own (no authorizer runs here)."""


def _refusals(*codes: int) -> dict[int, OpenAPIResponse]:
    return {code: refusal(code, _OWN.get(code)) for code in codes}


def _page_or_json(ok: dict[str, Any], *codes: int) -> dict[int, OpenAPIResponse]:
    """A link's answers: its HTML page, or JSON to a client that asks for it (`Accept`)."""
    out = _refusals(*codes)
    for code, answer in out.items():
        if code != 404:  # API Gateway's own 404 (no route: an empty token) is JSON only
            answer["content"] = {**_HTML, **answer.get("content", {})}
    return {200: {"description": "The page (HTML), or its content as JSON",
                  "content": {**_HTML, "application/json": {"schema": ok}}}, **out}


Token = Annotated[str, Path(pattern=SEALED, max_length=MAX_TOKEN_CHARS, description="the link's sealed token")]
Accept = Annotated[str | None, Header(description="`application/json` for JSON instead of the HTML page")]


@router.get(LINK, summary="A one-click link's confirmation page (changes nothing; no credentials: the token is)",
            responses=_page_or_json(_LINK_VIEW, 400, 404, 410))
def show_link(token: Token, accept: Accept = None) -> None:
    raise NotImplementedError  # served by the links function


@router.post(LINK, summary="Answer with a one-click link: the page's form (its `confirm` field) resumes",
             responses=_page_or_json(_LINK_DONE, 400, 403, 404, 409, 410, 413))
def follow_link(
    token: Token,
    confirm: Annotated[str, Form(max_length=256, description="the option the page's button names")],
    accept: Accept = None,
    origin: Annotated[str | None, Header(description="a browser's; another site's is refused (403)")] = None,
    sec_fetch_site: Annotated[str | None, Header(description="a browser's; `cross-site` is refused (403)")] = None,
) -> None:
    raise NotImplementedError  # served by the links function


@router.post(SLACK, summary="A click on a Slack button (no credentials: Slack signs the request)",
             responses={200: {"description": "The click was recorded (or was a duplicate: `noop`)",
                              "content": {"application/json": {"schema": _ANSWERED}}},
                        **_refusals(400, 401, 403, 404, 409, 413),
                        410: refusal(410, "`action_expired`: the button is past its expiry; nothing was recorded")})
def slack_interaction(
    payload: Annotated[str, Form(description="Slack's interaction, as JSON text (a `block_actions` one)")],
    x_slack_signature: Annotated[str, Header(description="`v0=` and the HMAC of the request")],
    x_slack_request_timestamp: Annotated[str, Header(description="when Slack signed it (Unix seconds)")],
) -> None:
    raise NotImplementedError  # served by the channels function

