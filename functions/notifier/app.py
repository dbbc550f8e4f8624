"""Notifier Lambda: the table's stream (interrupt events only, by the mapping's filter) to the
event bus and each agent's `notify` entries. Stops at the first record that fails and reports it,
so the stream retries from there in order (ReportBatchItemFailures)."""

from __future__ import annotations

from typing import Any

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from aws_lambda_powertools import Logger

    from holdpoint import tracing
    from holdpoint.assembly import get_notifier, get_store
    from holdpoint.aws.outbox import events

    logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child


@logger.inject_lambda_context(clear_state=True)
@tracing.capture
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for item in events(event, get_store()):
        try:
            get_notifier().on_event(item.tenant, item.session_id, item.event)
        except Exception:  # noqa: BLE001 - reported to the stream, which retries and finally dead-letters
            logger.exception("notify failed", extra={"session_id": item.session_id, "seq": item.event.get("seq")})
            return {"batchItemFailures": [{"itemIdentifier": item.sequence_number}]}
    return {"batchItemFailures": []}
