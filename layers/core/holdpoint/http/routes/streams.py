"""`GET /v1/sessions/{id}/events/stream`: the event log as server-sent events, one long-poll per
request (services.streams)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.core.ids import ID_REGEX
from holdpoint.http import edge, eventstream
from holdpoint.http.numbers import ASCII_DIGITS, header_number
from holdpoint.http.openapi import BEARER, answers, id_path
from holdpoint.ports import MAX_SEQ
from holdpoint.services import streams

router = APIGatewayHttpRouter()


def last_event_id(raw: str | None) -> int | None:
    """An `EventSource` reconnecting sends the last `id:` it saw; it takes precedence over `after_seq`."""
    return header_number(raw, "Last-Event-ID", MAX_SEQ)


@router.get("/v1/sessions/<session_id>/events/stream", security=BEARER,
            responses={**answers(200, 400, 404, 429),
                       200: {"description": "Server-sent events, `id:` the event's seq; a comment line when "
                                            "none came within about 25 s",
                             "content": eventstream.OPENAPI}},
            summary="The session's events as server-sent events (a long-poll: reconnect for more)")
def get_event_stream(
    session_id: Annotated[str, id_path("session")],
    after_seq: Annotated[int, Query(ge=0, le=MAX_SEQ), ASCII_DIGITS] = 0,
    turn_id: Annotated[str | None, Query(pattern=ID_REGEX)] = None,
) -> Response[str]:
    event = router.current_event
    who = edge.caller(event.raw_event)
    resume_from = last_event_id((event.headers or {}).get("last-event-id"))
    events, ended = streams.stream(assembly.get_store(), who, edge.check_id(session_id, f"session {session_id}"),
                                   after_seq if resume_from is None else resume_from, turn_id,
                                   leases=assembly.get_leases())
    body = "".join(eventstream.frame(e, e["seq"]) for e in events)
    if ended:
        body += eventstream.comment(f"turn {turn_id} ended")
    elif not events:
        body += eventstream.comment("no new events; reconnect")
    return eventstream.reply(body)
