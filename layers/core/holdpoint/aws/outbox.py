"""The outbox as DynamoDB Streams delivers it: the event-log items (`E#`) a session's own
transaction wrote, read from a Lambda stream event (NEW_IMAGE records)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from holdpoint.aws.store import Store


@dataclass(frozen=True)
class OutboxEvent:
    sequence_number: str  # the stream record's, for `batchItemFailures`
    tenant: str
    session_id: str
    event: dict[str, Any]  # {seq, type, at, data}


def session_of(pk: str) -> tuple[str, str] | None:
    """`T#{tenant}#S#{session}` -> (tenant, session)."""
    if not pk.startswith("T#") or "#S#" not in pk:
        return None
    tenant, _, session_id = pk[2:].partition("#S#")
    return (tenant, session_id) if tenant and session_id and "#" not in session_id else None


def events(stream_event: dict[str, Any], store: Store) -> Iterator[OutboxEvent]:
    """The new event-log items of a stream batch, in stream order (large bodies read from S3)."""
    for record in stream_event.get("Records") or []:
        ddb = record.get("dynamodb") or {}
        image = ddb.get("NewImage") or {}
        if record.get("eventName") != "INSERT" or not image.get("SK", {}).get("S", "").startswith("E#"):
            continue
        owner = session_of(image.get("PK", {}).get("S", ""))
        if owner is None:
            continue
        yield OutboxEvent(str(ddb.get("SequenceNumber")), owner[0], owner[1], store.body(image))
