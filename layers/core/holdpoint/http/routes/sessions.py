"""Sessions: start one, send inputs, read the view and the event log, raise interrupts, settle
calls, and the tenant's inbox of open interrupts."""

from __future__ import annotations

import time
from typing import Annotated, Any, cast

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.core.errors import Refusal
from holdpoint.core.expiry import Declared
from holdpoint.core.ids import ID_REGEX, IDEMPOTENCY_KEY_REGEX
from holdpoint.core.protocols.approval import policy_of
from holdpoint.core.protocols.client import ClientInput, InterruptResumeInput, RaiseInterruptBody, SettleBody
from holdpoint.http import edge, rendering
from holdpoint.http.bodies import NewSessionInput
from holdpoint.http.numbers import ASCII_DIGITS
from holdpoint.http.openapi import BEARER, answers, id_path
from holdpoint.http.telemetry import count, logger
from holdpoint.ports import MAX_SEQ, InboxStatus, SessionFilters, TooManyChanges
from holdpoint.services import sessions, streams
from holdpoint.services.inbox import InboxFilters, inbox
from holdpoint.services.resume import resume
from holdpoint.services.settle import settle
from holdpoint.services.traces import session_traces

router = APIGatewayHttpRouter()
MAX_AGE_SECS = 315_360_000  # ten years: an inbox age or expiry window, in seconds


def _reply(status: int, body: dict[str, Any]) -> Response[dict[str, Any]]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


IdempotencyKey = Annotated[str | None, Header(
    pattern=IDEMPOTENCY_KEY_REGEX, max_length=255,
    description="the caller's key for this input: a retry with the same key finds the session and turn the "
                "first request recorded (and kicks it again) instead of recording them twice")]


def _submit(session_id: str | None, body: Any, idempotency_key: str | None = None) -> Response[dict[str, Any]]:
    """Every client input: resumes and settles apply now (200); turns are accepted (202)."""
    who = edge.caller(router.current_event.raw_event)
    kind = getattr(body, "type", None)
    if session_id is None and kind in ("interrupt.resume", "tool.result", "tool.error"):
        raise Refusal("validation_error", f"{kind} needs an existing session", "type")
    if isinstance(body, InterruptResumeInput) and session_id is not None:
        out = resume(assembly.get_store(), assembly.get_parking(), who, session_id, body.interrupt_id,
                     edge.check_payload(body.payload), expect_fingerprint=body.expect_fingerprint,
                     comment=body.comment, arguments=body.arguments)
        if not out.noop:
            count("InterruptsResumed")
        return _reply(200, rendering.resumed(out))
    if kind in ("tool.result", "tool.error") and session_id is not None:  # as POST /calls/settle
        return _reply(200, rendering.settled(settle(assembly.get_store(), assembly.get_queue(), who, session_id,
                                                    SettleBody.model_validate(body.wire()))))
    try:
        accepted = sessions.submit(assembly.get_store(), assembly.get_queue(), who, session_id, body,
                                   idempotency_key=idempotency_key, backstop=assembly.get_timers)
    except TooManyChanges:
        raise Refusal("too_many_messages", "this input adds more messages than one request can record; "
                      "send them in smaller inputs", "messages") from None
    logger.append_keys(session_id=accepted.session_id)
    return _reply(202, {"session_id": accepted.session_id, "turn_id": accepted.turn_id,
                        "queued": accepted.queued})


@router.post("/v1/sessions", status_code=202, security=BEARER, responses=answers(202, 400, 404, 409, 413, 422, 429),
             summary="Start a session with a client input for a declared agent")
def create_session(body: Annotated[NewSessionInput, Body()],
                   idempotency_key: IdempotencyKey = None) -> Response[dict[str, Any]]:
    return _submit(None, body, idempotency_key)


@router.get("/v1/sessions", security=BEARER, responses=answers(200, 400),
            summary="The tenant's sessions, newest first (a client token: its own)")
def list_sessions(
    limit: Annotated[int, Query(ge=1, le=100), ASCII_DIGITS] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    agent_id: Annotated[str | None, Query(pattern=ID_REGEX)] = None,
    status: Annotated[str | None, Query(pattern="^(interrupted|running|done|idle)$")] = None,
    top_level: Annotated[bool | None, Query()] = None,
    attention: Annotated[bool, Query(description="only sessions whose delivery to the worker is retrying or "
                                                 "failed, most recently stuck first, each with `attention`")] = False,
) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return sessions.listing(assembly.get_store(), signing, who, limit, cursor,
                            SessionFilters(agent_id=agent_id, status=status, top_level=top_level, attention=attention))


@router.post("/v1/sessions/<session_id>/inputs", status_code=202, security=BEARER,
             responses={**answers(202, 400, 404, 409, 410, 413, 422, holdpoint_403=True),
                        200: {"description": "interrupt.resume, tool.result or tool.error: applied now"}},
             summary="Send a client input to a session")
def post_input(session_id: Annotated[str, id_path("session")],
               body: Annotated[ClientInput, Body()],
               idempotency_key: IdempotencyKey = None) -> Response[dict[str, Any]]:
    logger.append_keys(session_id=session_id)
    return _submit(edge.check_id(session_id, f"session {session_id}"), body, idempotency_key)


@router.get("/v1/sessions/<session_id>", security=BEARER, responses=answers(200, 400, 404, 429),
            summary="The session at its head")
def get_session(
    session_id: Annotated[str, id_path("session")],
    until: Annotated[str | None, Query(max_length=64, description="comma-separated statuses (idle, running, "
                                       "interrupted, done): answer once the session's status is one of them")] = None,
    wait: Annotated[int, Query(ge=0, le=25, description="with `until`: seconds to wait for it (long-poll)"),
                    ASCII_DIGITS] = 0,
) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    sid = edge.check_id(session_id, f"session {session_id}")
    wanted = frozenset(s.strip() for s in until.split(",")) if until else frozenset()
    unknown = sorted(wanted - streams.STATUSES)
    if unknown:
        raise Refusal("validation_error", f"until names {', '.join(unknown)[:100]}, which is no status; use "
                      f"{', '.join(sorted(streams.STATUSES))}", "until")
    if not wanted:
        return sessions.view(assembly.get_store(), who, sid)
    return streams.view_when(assembly.get_store(), who, sid, wanted, wait, assembly.get_leases())


@router.get("/v1/sessions/<session_id>/events", security=BEARER, responses=answers(200, 400, 404, 429),
            summary="The session's event log, paged")
def get_events(
    session_id: Annotated[str, id_path("session")],
    after_seq: Annotated[int, Query(ge=0, le=MAX_SEQ), ASCII_DIGITS] = 0,
    limit: Annotated[int, Query(ge=1, le=500), ASCII_DIGITS] = 100,
    wait: Annotated[int, Query(ge=0, le=25, description="seconds to wait for a first event (long-poll)"),
                    ASCII_DIGITS] = 0,
) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return streams.page(assembly.get_store(), who, edge.check_id(session_id, f"session {session_id}"),
                        after_seq, limit, wait, assembly.get_leases())


@router.get("/v1/sessions/<session_id>/trace", security=BEARER, responses=answers(200, 400, 404, 429),
            summary="The session's traces: each turn's hops (API, engine, park, resume, wake) with their times")
def get_trace(
    session_id: Annotated[str, id_path("session")],
    hours: Annotated[int, Query(ge=1, le=720, description="how far back to look, in hours (an end user: at most "
                                                         "24)"), ASCII_DIGITS] = 24,
) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return session_traces(assembly.get_store(), assembly.get_traces(), who,
                          edge.check_id(session_id, f"session {session_id}"), time.time(), hours,
                          leases=assembly.get_leases())


@router.post("/v1/sessions/<session_id>/interrupts", security=BEARER,
             responses=answers(200, 400, 404, 409, 413, 429), summary="Raise an interrupt at the head")
def post_interrupt(session_id: Annotated[str, id_path("session")], body: RaiseInterruptBody) -> dict[str, Any]:
    event = router.current_event
    out = sessions.raise_interrupt(
        assembly.get_store(), assembly.get_queue(), edge.caller(event.raw_event),
        edge.check_id(session_id, f"session {session_id}"), reason=body.reason,
        payload=edge.check_payload(body.payload), global_=body.global_, interrupt_id=body.interrupt_id,
        expires_in=body.expires_in, request_id=event.request_context.request_id,
        response_schema=body.declared_schema(), approval=policy_of(body.approval),
        declared=Declared.of(body), backstop=assembly.get_timers)
    if not out.noop:
        count("InterruptsRaised")
    return rendering.raised(out)


@router.post("/v1/sessions/<session_id>/calls/settle", security=BEARER,
             responses=answers(200, 400, 404, 409, 413), summary="Settle a deferred or client call")
def post_settle(session_id: Annotated[str, id_path("session")], body: SettleBody) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    return rendering.settled(settle(assembly.get_store(), assembly.get_queue(), who,
                                    edge.check_id(session_id, f"session {session_id}"), body))


@router.get("/v1/interrupts", security=BEARER, responses=answers(200, 400),
            summary="The tenant's interrupts, newest first: the inbox and the audit trail")
def get_inbox(
    status: Annotated[str, Query(pattern="^(open|resolved|expired|all)$")] = "open",
    limit: Annotated[int, Query(ge=1, le=100), ASCII_DIGITS] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    agent_id: Annotated[str | None, Query(pattern=ID_REGEX)] = None,
    reason: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    older_than: Annotated[int | None, Query(ge=0, le=MAX_AGE_SECS, description="seconds"), ASCII_DIGITS] = None,
    expiring_within: Annotated[int | None, Query(ge=0, le=MAX_AGE_SECS, description="seconds"), ASCII_DIGITS] = None,
    approver: Annotated[str | None, Query(pattern="^me$")] = None,
) -> dict[str, Any]:
    who = edge.caller(router.current_event.raw_event)
    filters = InboxFilters(status=cast(InboxStatus, status), agent_id=agent_id, reason=reason,
                           older_than=older_than, expiring_within=expiring_within, approver_me=approver == "me")
    return inbox(assembly.get_store(), signing, who, limit, cursor, filters)
