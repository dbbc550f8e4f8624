"""SQS event source mapping look-alike: long-poll the queue, hand batches to the function in Lambda's
SQS event shape, and delete what succeeded (ReportBatchItemFailures semantics)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import boto3
from botocore.config import Config

from .. import FAKE_ENV, REGION
from ..provision import SqsMapping, StreamMapping
from .runtime import Function, run_until_stopped
from .streams import StreamPoller

log = logging.getLogger("holdpoint_local.emulators.pollers")

RETRY_VISIBILITY_SECONDS = 1  # failed records come back quickly locally (AWS would wait the full timeout)
_RECORD_ATTRS = (
    "ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
    "MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "AWSTraceHeader",
)  # fmt: skip


def _message_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, attr in (raw or {}).items():
        out[name] = {
            "stringValue": attr.get("StringValue"),
            "binaryValue": attr.get("BinaryValue"),
            "stringListValues": attr.get("StringListValues", []),
            "binaryListValues": attr.get("BinaryListValues", []),
            "dataType": attr.get("DataType"),
        }
    return out


def build_sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str = REGION) -> dict[str, Any]:
    """Lambda's SQS event for a batch of ReceiveMessage results."""
    records = []
    for msg in messages:
        attrs = msg.get("Attributes", {})
        records.append(
            {
                "messageId": msg["MessageId"],
                "receiptHandle": msg["ReceiptHandle"],
                "body": msg["Body"],
                "attributes": {k: attrs[k] for k in _RECORD_ATTRS if k in attrs},
                "messageAttributes": _message_attributes(msg.get("MessageAttributes", {})),
                "md5OfBody": msg.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


def failed_ids(result: Any, batch_ids: set[str], report_failures: bool) -> set[str]:
    """Which records Lambda would treat as failed, given the handler's return value.

    Without ReportBatchItemFailures any return is success. With it, a null/empty response is success,
    and a malformed one (or an itemIdentifier not in the batch) fails the whole batch, as on AWS.
    """
    if not report_failures or result is None:
        return set()
    if not isinstance(result, dict):
        return set(batch_ids)
    items = result.get("batchItemFailures")
    if items is None:
        return set()
    if not isinstance(items, list):
        return set(batch_ids)
    failed: set[str] = set()
    for item in items:
        ident = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not ident or ident not in batch_ids:
            return set(batch_ids)
        failed.add(ident)
    return failed


class SqsPoller:
    """One polling thread for one mapping; several pollers per mapping give Lambda-like concurrency
    (FIFO ordering still holds: SQS hands out a message group to one receiver at a time)."""

    def __init__(
        self,
        mapping: SqsMapping,
        function: Function,
        *,
        endpoint_url: str,
        stop_event: threading.Event,
        wait_seconds: int = 1,
        name: str = "poller",
    ) -> None:
        self.mapping = mapping
        self.function = function
        self.stop_event = stop_event
        self.wait_seconds = wait_seconds
        self.batches = 0
        self.sqs = boto3.client(
            "sqs",
            endpoint_url=endpoint_url,
            region_name=REGION,  # the default session: it polls as the function's role (credentials.py)
            config=Config(retries={"max_attempts": 2}, read_timeout=wait_seconds + 10),
        )
        # Lambda lets a failed record's visibility timeout run out; the local stack shortens it to
        # RETRY_VISIBILITY_SECONDS as the operator (`_hand_back`).
        self.operator_sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name=REGION,
                                         aws_access_key_id=FAKE_ENV["AWS_ACCESS_KEY_ID"],
                                         aws_secret_access_key=FAKE_ENV["AWS_SECRET_ACCESS_KEY"])
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._gate = threading.Lock()  # orders a batch's delivery against the stop (see `settle`)
        self._delivering = False

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the poller to end: a batch in delivery is finished; one in its long poll is left
        to end it, and hands back what it then receives (`poll_once`), so a stop never waits out
        the long poll (a second for every stack a test run stops)."""
        with self._gate:
            delivering = self._delivering
        if delivering:
            self._thread.join(timeout)

    def _run(self) -> None:
        with self.function.acting():  # an event source mapping polls with the function's execution role
            run_until_stopped(self.stop_event, self.poll_once, f"poll of {self.mapping.queue_logical_id}")

    def poll_once(self) -> int:
        """Receive one batch and deliver it; returns how many messages were received."""
        resp = self.sqs.receive_message(
            QueueUrl=self.mapping.queue_url,
            MaxNumberOfMessages=min(10, self.mapping.batch_size),
            WaitTimeSeconds=self.wait_seconds,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = resp.get("Messages", [])
        if not messages:
            return 0
        with self._gate:
            if self.stop_event.is_set():  # stopped during the long poll: visible again at once
                self._hand_back(messages, 0)
                return 0
            self._delivering = True
        try:
            self.deliver(messages)
        finally:
            with self._gate:
                self._delivering = False
        return len(messages)

    def _hand_back(self, messages: list[dict[str, Any]], seconds: int) -> None:
        """Make received records visible again after `seconds` (a call of the operator's, not one
        the function's role makes on AWS)."""
        self.operator_sqs.change_message_visibility_batch(
            QueueUrl=self.mapping.queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": seconds}
                     for i, m in enumerate(messages)],
        )

    def deliver(self, messages: list[dict[str, Any]]) -> set[str]:
        """Invoke the function with one batch; delete successes, make failures visible again soon."""
        self.batches += 1
        event = build_sqs_event(messages, self.mapping.queue_arn)
        ids = {m["MessageId"] for m in messages}
        try:
            result = self.function.invoke(event)
            failed = failed_ids(result, ids, self.mapping.report_batch_item_failures)
        except Exception:
            log.exception("%s raised on a batch of %d", self.mapping.function, len(messages))
            failed = set(ids)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            chunk = done[start : start + 10]
            self.sqs.delete_message_batch(
                QueueUrl=self.mapping.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
        retry = [m for m in messages if m["MessageId"] in failed]
        if retry:
            self._hand_back(retry, RETRY_VISIBILITY_SECONDS)
        return failed


class PollerGroup:
    """All pollers of the stack (SQS and DynamoDB Streams mappings), stopped together."""

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.pollers: list[SqsPoller | StreamPoller] = []

    def add_stream(self, mapping: StreamMapping, function: Function, endpoint_url: str) -> None:
        """One reader per stream mapping: a stream shard is read in order by one consumer."""
        self.pollers.append(StreamPoller(mapping, function, endpoint_url=endpoint_url, stop_event=self.stop_event))

    def add(self, mapping: SqsMapping, function: Function, endpoint_url: str, count: int = 1) -> None:
        for i in range(max(1, count)):
            poller = SqsPoller(
                mapping, function, endpoint_url=endpoint_url, stop_event=self.stop_event,
                name=f"poller-{mapping.function}-{i}",
            )  # fmt: skip
            self.pollers.append(poller)

    def start(self) -> None:
        for poller in self.pollers:
            poller.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        for poller in self.pollers:
            poller.join(timeout)
