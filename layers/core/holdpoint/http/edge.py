"""What every HTTP handler shares: the caller from the authorizer's context, id and payload
checks, refusals as status codes and error bodies, and the 500 body (never a stack trace)."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.core.errors import Code, Refusal
from holdpoint.core.ids import ID_PATTERN
from holdpoint.http.credentials import caller_of, is_person
from holdpoint.http.limits import MAX_PAYLOAD_BYTES
from holdpoint.ports import Throttled, Unavailable
from holdpoint.services.caller import Caller

STATUS: dict[Code, int] = {
    "validation_error": 400,
    "invalid_request": 400,
    "invalid_resume": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_an_approver": 403,
    "edit_not_allowed": 403,
    "not_found": 404,
    "interrupted": 409,
    "turn_already_active": 409,
    "call_not_open": 409,
    "call_held": 409,
    "conflict": 409,
    "stale_approval": 409,
    "decision_not_current": 409,
    "invalid_link": 400,
    "link_expired": 410,
    "action_expired": 410,
    "interrupt_expired": 410,
    "payload_too_large": 413,
    "too_many_messages": 413,
    "unknown_input_type": 422,
    "quota_exceeded": 429,
    "throttled": 503,
    "unavailable": 503,
}
PERSON_ROUTES = frozenset({
    "GET /v1/sessions",
    "GET /v1/sessions/{session_id}",
    "GET /v1/sessions/{session_id}/events",
    "GET /v1/sessions/{session_id}/events/stream",
    "GET /v1/sessions/{session_id}/trace",
    "GET /v1/interrupts",
    "POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume",
    "POST /v1/interrupts/resume",
})
"""What a person signed in through the identity provider may do, by the route API Gateway matched
(its `routeKey`): read sessions and the inbox, follow events, answer interrupts. Every other
route, and any route added later until it is listed here, is refused to a person."""
RETRY_AFTER_SECS = 1
"""What a 503 for a refusal about load asks the client to wait: botocore already backed off."""
INTERNAL_BODY = {"error": {"code": "internal", "message": "internal error"}}


def status_of(refusal: Refusal) -> int:
    return STATUS[refusal.code]


def headers_of(refusal: Refusal) -> dict[str, str]:
    """The headers a refusal carries besides its body: `Retry-After` for a quota (429) or load (503)."""
    return {"Retry-After": str(max(1, refusal.retry_after))} if refusal.retry_after is not None else {}


def load_refusal(exc: Throttled | Unavailable) -> Refusal:
    """AWS refused a call this request needs, about load rather than the request: 503, try later.
    Nothing the request asked for was done past the refused call, and every write is conditional,
    so the same request sent again is safe."""
    if isinstance(exc, Throttled):
        return Refusal("throttled", "the service is busy; retry after the time Retry-After says",
                       retry_after=RETRY_AFTER_SECS)
    return Refusal("unavailable", "the service is unavailable for now; retry after the time Retry-After says",
                   retry_after=RETRY_AFTER_SECS)


def authorizer_context(event: dict[str, Any]) -> dict[str, Any]:
    """What the authorizer said of the caller (its simple-response context); empty without one."""
    lam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda") or {}
    return lam if isinstance(lam, dict) else {}


def authorizer_refusal(event: dict[str, Any]) -> Refusal | None:
    """The authorizer could not check the credentials (AWS refused its read): a 503, never a 401
    that would tell a caller with good credentials they are bad."""
    kind = authorizer_context(event).get("unavailable")
    if not kind:
        return None
    return load_refusal(Throttled() if kind == "throttled" else Unavailable())


def person_refusal(event: dict[str, Any]) -> Refusal | None:
    """A person may only read, follow and answer interrupts (`PERSON_ROUTES`): any other request
    of theirs is refused before a route reads its body, so it records nothing. An event naming
    no route is refused too."""
    if not is_person(authorizer_context(event)):
        return None
    route = event.get("routeKey")
    if isinstance(route, str) and route in PERSON_ROUTES:
        return None
    what = short(route) if isinstance(route, str) and route else "this route"
    return Refusal("forbidden", f"a person signed in through the identity provider may only read, follow and "
                   f"answer interrupts, not {what}; use an API key")


def door_refusal(event: dict[str, Any]) -> Refusal | None:
    """What refuses a request before any route runs: credentials the authorizer could not
    check, or a person asking for more than a person may do."""
    refused = authorizer_refusal(event)
    return refused if refused is not None else person_refusal(event)


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An API Gateway proxy response with a JSON body."""
    return {"statusCode": status, "headers": {"Content-Type": "application/json", **(headers or {})},
            "body": json.dumps(body)}


def refusal_reply(refusal: Refusal) -> dict[str, Any]:
    return json_reply(status_of(refusal), refusal.body(), headers_of(refusal))


def caller(event: dict[str, Any]) -> Caller:
    """Who is calling, as the authorizer said (its simple-response context), refused if a route
    should not have run for them (`door_refusal`, as the resolver checks first)."""
    refused = door_refusal(event)
    if refused is not None:
        raise refused
    lam = authorizer_context(event)
    if not lam.get("tenant"):
        raise Refusal("unauthorized", "missing or invalid credentials")
    return caller_of(lam)


def short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def check_id(value: str, what: str) -> str:
    """An id that cannot exist is answered like an unknown one (404), so a probe learns nothing."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise Refusal("not_found", f"{short(what)} not found")
    return value


def check_param_id(value: str, param: str) -> str:
    """An id the caller chooses (a new agent, an interrupt to resume): malformed is 400 naming it."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise Refusal("validation_error", f"{param} must be 1-64 characters of [A-Za-z0-9._:-], starting with a "
                      "letter or digit", param)
    return value


def check_payload(payload: Any) -> Any:
    """Refuse a payload too large to store with its interrupt (measured as stored: compact JSON)."""
    if payload is not None and len(json.dumps(payload, separators=(",", ":"))) > MAX_PAYLOAD_BYTES:
        raise Refusal("payload_too_large", f"payload is over {MAX_PAYLOAD_BYTES} bytes as stored", "payload")
    return payload

