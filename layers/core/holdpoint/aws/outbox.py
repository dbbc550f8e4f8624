"""The outbox as DynamoDB Streams delivers it: the streamed events (`schema.streamed`) of the
event-log items (`E#`, one a commit) a session's own transaction wrote, and the answers a resume
appended to an open interrupt (`I#`) without deciding it, read from a Lambda stream event
(NEW_AND_OLD_IMAGES records)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypedDict

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.expr import Item
from holdpoint.aws.store import Store
from holdpoint.core.jsontypes import JsonObject


class StreamChange(TypedDict, total=False):
    """A stream record's `dynamodb` part, as a NEW_AND_OLD_IMAGES stream writes it."""

    SequenceNumber: str
    Keys: Item
    NewImage: Item
    OldImage: Item


class StreamRecord(TypedDict, total=False):
    eventName: str  # INSERT, MODIFY or REMOVE
    dynamodb: StreamChange


class StreamEvent(TypedDict, total=False):
    """The Lambda event of a DynamoDB stream batch (the part read here)."""

    Records: list[StreamRecord]


@dataclass(frozen=True)
class OutboxEvent:
    sequence_number: str  # the stream record's, for `batchItemFailures`
    tenant: str
    session_id: str
    event: JsonObject  # {seq, type, at, data}


def session_of(pk: str) -> tuple[str, str] | None:
    """`T#{tenant}#S#{session}` -> (tenant, session)."""
    if not pk.startswith("T#") or "#S#" not in pk:
        return None
    tenant, _, session_id = pk[2:].partition("#S#")
    return (tenant, session_id) if tenant and session_id and "#" not in session_id else None


def events(stream_event: StreamEvent, store: Store) -> Iterator[OutboxEvent]:
    """The lifecycle events of a stream batch, in stream order (large bodies read from S3): new
    event-log items, and answers appended to an open interrupt."""
    for record in stream_event.get("Records") or []:
        ddb = record.get("dynamodb") or {}
        image = ddb.get("NewImage") or {}
        sk = image.get("SK", {}).get("S", "")
        owner = session_of(image.get("PK", {}).get("S", ""))
        if owner is None:
            continue
        found: list[JsonObject] = []
        if record.get("eventName") == "INSERT" and sk.startswith(k.EVENT):
            found = [e for e in store.codec.logged(image) if k.streamed(str(e.get("type")))]
        elif record.get("eventName") == "MODIFY" and sk.startswith("I#"):
            event = answered(image, ddb.get("OldImage") or {}, store)
            found = [event] if event is not None else []
        for event in found:
            yield OutboxEvent(str(ddb.get("SequenceNumber")), owner[0], owner[1], event)


def _answers(image: Item) -> list[JsonObject]:
    return [json.loads(a["S"]) for a in (image.get("approvals") or {}).get("L") or []]


def answered(new: Item, old: Item, store: Store) -> JsonObject | None:
    """A2: the `interrupt.answered` event of an interrupt item change that appended an answer and
    left the interrupt open (the answer that decides it is published as `interrupt.resolved`).
    Keyed by interrupt, generation and answer count, so a redelivered record is the same event."""
    after = _answers(new)
    if new.get("status", {}).get("S") != "open" or len(after) <= len(_answers(old)):
        return None
    body = store.codec.interrupt_body(new)
    interrupt_id = new["SK"]["S"][2:]
    generation = new.get("generation", {}).get("N", "0")
    answer = after[-1]
    policy = body.get("policy")
    return {"type": "interrupt.answered", "key": f"{interrupt_id}#{generation}#{len(after)}",
            "at": answer.get("at"), "data": {
                "interrupt_id": interrupt_id, "reason": body.get("reason"), "answers": len(after),
                "quorum": policy.get("quorum", 1) if isinstance(policy, dict) else 1,
                "answer": {k: answer.get(k) for k in ("subject", "origin", "status", "comment")}}}
