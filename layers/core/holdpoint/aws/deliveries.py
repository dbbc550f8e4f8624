"""Notification delivery records, in the session's partition (`D#{event_id}#{entry}`: before the
events and the state, so no session read ever sees them), and the notification dead-letter queue
(`NOTIFY_DLQ_URL`).

The message a chat channel posted for an interrupt is kept beside them (`D#M#{key}`), written
once (the first kept wins), so the channel can update it when the interrupt closes (S1).

Every step is a conditional write: `claim` creates the record only if it does not exist (a
redelivered stream record starts nothing), `begin` moves it to the next attempt only from the
attempt before (a repeated timer message runs nothing), and `finish` records the outcome of the
attempt that is running. `waiting` reads a record that waits for its retry, for a redelivery
that finds its timer was refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.ddb.expr import AttributeValue, Item
from holdpoint.aws.ddb.schema import delivery_sk, posted_sk, session_pk
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.errors import ConditionFailed
from holdpoint.ports import DeadLetter, DeliveryRecord, DeliveryState, Posted

KEEP_SECS = 14 * 24 * 3600
"""A record outlives every redelivery it dedupes (a stream keeps records a day; retries end within
the policy's total) and then expires through the table's TTL."""

POSTED_KEEP_SECS = 400 * 24 * 3600
"""A posted message's reference outlives the longest an interrupt can stay parked (a Step
Functions execution's year), then expires through the table's TTL."""


def _s(value: str) -> AttributeValue:
    return {"S": value}


def _n(value: int) -> AttributeValue:
    return {"N": str(value)}


class DeliveryLog:
    def __init__(self, table: str | None = None, client: Any = None, sqs: Any = None,
                 dlq_url: str | None = None) -> None:
        self.table = table or os.environ["TABLE_NAME"]
        self.db = Table(self.table, client)
        self.client = self.db.client
        self._sqs = sqs
        self.dlq_url = dlq_url if dlq_url is not None else os.environ.get("NOTIFY_DLQ_URL", "")

    def _key(self, tenant: str, session_id: str, key: str) -> Item:
        return {"PK": _s(session_pk(tenant, session_id)), "SK": _s(delivery_sk(key))}

    def claim(self, tenant: str, session_id: str, key: str, record: DeliveryRecord) -> bool:
        """Create the record at attempt 1; False when it already exists (the delivery has started)."""
        item = {**self._key(tenant, session_id, key), "status": _s("sending"), "attempt": _n(1),
                "body": _s(json.dumps(record, separators=(",", ":"))), "ttl": _n(int(time.time()) + KEEP_SECS)}
        try:
            self.db.put(item, ConditionExpression="attribute_not_exists(SK)")
        except ConditionFailed:
            return False
        return True

    def begin(self, tenant: str, session_id: str, key: str, attempt: int) -> DeliveryRecord | None:
        """Move a record from `attempt - 1` to `attempt`; its body, or None if it was not there. The
        record is `retrying`, or still `sending` when recording that attempt's failure was refused:
        only a failed attempt sets the timer that asks for the next, so either way it failed."""
        try:
            out = self.db.update(
                self._key(tenant, session_id, key),
                UpdateExpression="SET #s = :sending, attempt = :n",
                ConditionExpression="(#s = :retrying OR #s = :sending) AND attempt = :prev",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":sending": _s("sending"), ":retrying": _s("retrying"),
                                           ":n": _n(attempt), ":prev": _n(attempt - 1)})
        except ConditionFailed:
            return None
        body: DeliveryRecord = json.loads(out["body"]["S"])
        return body

    def finish(self, tenant: str, session_id: str, key: str, attempt: int, status: str,
               error: str | None = None) -> None:
        """Record how attempt `attempt` ended (`delivered`, `retrying`, `dead`), if it is still the one running."""
        values: dict[str, AttributeValue] = {":status": _s(status), ":sending": _s("sending"), ":n": _n(attempt),
                                                 ":error": _s(error or "")}
        with contextlib.suppress(ConditionFailed):  # a later attempt runs: this one's outcome is moot
            self.db.update(
                self._key(tenant, session_id, key),
                UpdateExpression="SET #s = :status, last_error = :error",
                ConditionExpression="#s = :sending AND attempt = :n",
                ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues=values)

    def waiting(self, tenant: str, session_id: str, key: str) -> tuple[DeliveryRecord, int] | None:
        """The record's body and its failed attempt while it is `retrying` (one consistent read)."""
        item = self.db.get(self._key(tenant, session_id, key))
        if not item or item["status"]["S"] != "retrying":
            return None
        return json.loads(item["body"]["S"]), int(item["attempt"]["N"])

    def read(self, tenant: str, session_id: str, key: str) -> DeliveryState | None:
        """Where the delivery stands (the notifier's last error, tests and operators)."""
        item = self.db.get(self._key(tenant, session_id, key))
        if not item:
            return None
        return DeliveryState(item["status"]["S"], int(item["attempt"]["N"]),
                             item.get("last_error", {}).get("S") or None)

    def keep_posted(self, tenant: str, session_id: str, key: str, ref: Posted) -> None:
        """Keep a posted message's `{channel, ts}` under `key`, unless one is kept already."""
        item = {"PK": _s(session_pk(tenant, session_id)), "SK": _s(posted_sk(key)),
                "channel": _s(ref.channel), "ts": _s(ref.ts), "ttl": _n(int(time.time()) + POSTED_KEEP_SECS)}
        with contextlib.suppress(ConditionFailed):  # the first kept wins
            self.db.put(item, ConditionExpression="attribute_not_exists(SK)")

    def posted(self, tenant: str, session_id: str, key: str) -> Posted | None:
        """The message kept under `key`, or None when none was posted."""
        item = self.db.get({"PK": _s(session_pk(tenant, session_id)), "SK": _s(posted_sk(key))})
        return Posted(item["channel"]["S"], item["ts"]["S"]) if item else None

    @property
    def sqs(self) -> Any:
        if self._sqs is None:
            self._sqs = clients.client("sqs")
        return self._sqs

    def dead_letter(self, record: DeadLetter) -> None:
        """The delivery, its last error and attempt count, on the notification DLQ (alarmed)."""
        self.sqs.send_message(QueueUrl=self.dlq_url, MessageBody=json.dumps(
            {"kind": "notify.dead", **record}, separators=(",", ":")))
