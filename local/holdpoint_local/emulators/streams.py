"""DynamoDB Streams event source mapping look-alike: read the table's stream from moto (DescribeStream,
GetShardIterator, GetRecords), keep the records the mapping's FilterCriteria match, and hand them to
the function in Lambda's DynamoDB event shape, in order.

As Lambda does for a stream: a batch is retried until it succeeds, from the first record the handler
reports in `batchItemFailures` (ReportBatchItemFailures), halving a batch whose invocation raised
(BisectBatchOnFunctionError), at most `MaximumRetryAttempts` times; then the batch's description goes
to the on-failure destination (an SQS queue) and the mapping moves on. Retries wait
`RETRY_SECONDS`, not Lambda's backoff.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError

from .. import REGION
from ..provision import StreamMapping
from .runtime import Function, run_until_stopped

log = logging.getLogger("holdpoint_local.emulators.streams")

POLL_SECONDS = 0.1
RETRY_SECONDS = 0.2
CHECKPOINTS: dict[tuple[str, str], str] = {}
"""(stream, function) -> the sequence number of the last record handled: the mapping's checkpoint,
which on AWS outlives the function's execution environments, so a restarted stack goes on from
there instead of reading the stream again from its start."""


def matches(pattern: Any, value: Any) -> bool:
    """The subset of EventBridge patterns a FilterCriteria uses here: nested objects, lists of
    alternatives, exact values and `{"prefix": ...}`. Anything else is refused (not guessed)."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        return any(_one(alternative, value) for alternative in pattern)
    raise ValueError(f"unsupported filter pattern {pattern!r}")


def _one(alternative: Any, value: Any) -> bool:
    if isinstance(alternative, dict):
        if set(alternative) != {"prefix"}:
            raise ValueError(f"unsupported filter operator {alternative!r}")
        return isinstance(value, str) and value.startswith(alternative["prefix"])
    return bool(alternative == value)


def lambda_record(record: dict[str, Any], stream_arn: str, region: str = REGION) -> dict[str, Any]:
    """A GetRecords record as Lambda hands it over: `eventSourceARN` added, the creation time in
    epoch seconds."""
    ddb = dict(record["dynamodb"])
    created = ddb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        ddb["ApproximateCreationDateTime"] = int(created.timestamp())
    return {"eventID": record["eventID"], "eventName": record["eventName"], "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": region, "dynamodb": ddb, "eventSourceARN": stream_arn}


def failed_from(result: Any, batch: list[dict[str, Any]]) -> int | None:
    """Index of the first record to retry, from the handler's answer (None: all succeeded)."""
    if not isinstance(result, dict) or not result.get("batchItemFailures"):
        return None
    seqs = [r["dynamodb"]["SequenceNumber"] for r in batch]
    marks = [f.get("itemIdentifier") for f in result["batchItemFailures"] if isinstance(f, dict)]
    found = [seqs.index(m) for m in marks if m in seqs]
    return min(found) if found else 0  # an identifier not in the batch fails it whole, as on AWS


class StreamPoller:
    def __init__(self, mapping: StreamMapping, function: Function, *, endpoint_url: str,
                 stop_event: threading.Event) -> None:
        self.mapping = mapping
        self.function = function
        self.stop_event = stop_event
        # The default session: the mapping reads the stream as the function's role (credentials.py).
        kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": REGION}
        self.streams = boto3.client("dynamodbstreams", **kwargs)
        self.sqs = boto3.client("sqs", **kwargs)
        self.delivered = 0
        self._next: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"stream-{mapping.function}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def _checkpoint(self) -> tuple[str, str]:
        return (self.mapping.stream_arn, self.mapping.function)

    def _iterator(self) -> str:
        """After the checkpoint, or at the mapping's starting position the first time."""
        shards = self.streams.describe_stream(StreamArn=self.mapping.stream_arn)["StreamDescription"]["Shards"]
        where: dict[str, Any] = {"ShardIteratorType": "TRIM_HORIZON" if self.mapping.starting_position
                                 == "TRIM_HORIZON" else "LATEST"}
        if self._checkpoint in CHECKPOINTS:
            where = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": CHECKPOINTS[self._checkpoint]}
        return str(self.streams.get_shard_iterator(StreamArn=self.mapping.stream_arn, ShardId=shards[0]["ShardId"],
                                                   **where)["ShardIterator"])

    def _run(self) -> None:
        with self.function.acting():  # the mapping reads the stream with the function's execution role
            run_until_stopped(self.stop_event, self.poll_once, f"stream mapping of {self.mapping.function}")

    def poll_once(self) -> None:
        """Read the shard once from where the last read ended; deliver what the filters keep."""
        self._next = self._next or self._iterator()
        try:
            page = self.streams.get_records(ShardIterator=self._next, Limit=self.mapping.batch_size)
        except ClientError:
            self._next = None  # start over from a fresh iterator
            raise
        self._next = page["NextShardIterator"]
        records = [lambda_record(r, self.mapping.stream_arn) for r in page.get("Records", [])]
        kept = [r for r in records if not self.mapping.filters or any(matches(f, r) for f in self.mapping.filters)]
        if kept:
            self.deliver(kept)
        if records and not self.stop_event.is_set():  # a delivery cut short by a stop is not handled
            CHECKPOINTS[self._checkpoint] = records[-1]["dynamodb"]["SequenceNumber"]
        else:
            self.stop_event.wait(POLL_SECONDS)

    def deliver(self, batch: list[dict[str, Any]]) -> None:
        """One batch, retried as the mapping says; then on to the next."""
        retries = 0
        while batch and not self.stop_event.is_set():
            try:
                result = self.function.invoke({"Records": batch})
                first = failed_from(result, batch) if self.mapping.report_batch_item_failures else None
            except Exception:  # noqa: BLE001 - the function's error fails the batch, as on Lambda
                log.exception("%s raised on a stream batch of %d", self.mapping.function, len(batch))
                if self.mapping.bisect and len(batch) > 1:
                    half = len(batch) // 2
                    self.deliver(batch[:half])
                    batch = batch[half:]
                    continue
                first = 0
            if first is None:
                self.delivered += len(batch)
                return
            self.delivered += first
            batch = batch[first:]
            retries += 1
            if 0 <= self.mapping.max_retries < retries:
                self._give_up(batch)
                return
            self.stop_event.wait(RETRY_SECONDS)

    def _give_up(self, batch: list[dict[str, Any]]) -> None:
        """What Lambda sends the on-failure destination: where the batch is, not the records."""
        log.warning("%s: a stream batch of %d dead-lettered", self.mapping.function, len(batch))
        if not self.mapping.on_failure_queue_url:
            return
        seqs = [r["dynamodb"]["SequenceNumber"] for r in batch]
        body = {"requestContext": {"condition": "RetryAttemptsExhausted",
                                   "functionArn": self.mapping.function},
                "DDBStreamBatchInfo": {"streamArn": self.mapping.stream_arn, "batchSize": len(batch),
                                       "startSequenceNumber": seqs[0], "endSequenceNumber": seqs[-1]}}
        self.sqs.send_message(QueueUrl=self.mapping.on_failure_queue_url, MessageBody=json.dumps(body))
