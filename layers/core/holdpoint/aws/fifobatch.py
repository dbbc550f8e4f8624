"""A batch from an SQS FIFO queue, answered with Lambda's partial batch response
(`ReportBatchItemFailures`): records run in order, and the first that fails stops its message
group (a session), so it and every later record of that group are reported failed and come back
in the same order. Other groups' records still run: one session's poison record never holds
another's, whatever tenant it belongs to (Powertools calls this `skip_group_on_error`).

The engine needs only this, so it does without Powertools' batch utility, whose import (asyncio
and every event data class) cost ~15 ms of each engine cold start (bench/README.md (c)).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from holdpoint.aws.errors import EntireBatchFailed
from holdpoint.ports import Throttled, Unavailable

Record = Mapping[str, Any]
"""One record of the SQS event as Lambda sends it (`messageId`, `body`, `attributes`...)."""


class Log(Protocol):
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...

    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


def process_fifo_batch(event: Mapping[str, Any], handle: Callable[[Record], None],
                       log: Log) -> dict[str, list[dict[str, str]]]:
    """Run `handle` on each record in order; a record that raises, and every later record of its
    message group, are failures."""
    records: list[Record] = list(event.get("Records") or [])
    failed: list[str] = []
    stopped: set[str] = set()
    for record in records:
        group = str((record.get("attributes") or {}).get("MessageGroupId", ""))
        if group in stopped:  # FIFO: nothing of a group may run before its failed record
            failed.append(record["messageId"])
            continue
        try:
            handle(record)
        except Exception as exc:  # noqa: BLE001 - any failure is the record's: SQS redelivers it
            # AWS saying "not now" is retried and expected under load (WARNING); anything else (an
            # AccessDenied, a bug) will fail again, so it is an ERROR with its cause.
            say = log.warning if isinstance(exc, (Throttled, Unavailable)) else log.error
            say("record failed; it and the rest of its group come back",
                extra={"message_id": record["messageId"], "error": f"{type(exc).__name__}: {exc}"})
            failed.append(record["messageId"])
            stopped.add(group)
    if records and len(failed) == len(records):
        raise EntireBatchFailed(f"all {len(records)} records failed")
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}


def receive_count(record: Record) -> int:
    """How many times SQS has handed this record out (1 the first time)."""
    return int((record.get("attributes") or {}).get("ApproximateReceiveCount", 1))
