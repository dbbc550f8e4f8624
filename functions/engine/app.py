"""Engine Lambda: consumes the FIFO work queue, one session step loop per message (and the retries
of notification webhooks, which come back on it from their durable timers)."""

from __future__ import annotations

from typing import Any

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit

    from holdpoint.assembly import get_notifier, get_runner
    from holdpoint.aws.fifobatch import Record, process_fifo_batch, receive_count
    from holdpoint.services.runner import parse_body

    logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child
    metrics = Metrics(namespace="Holdpoint", service="engine")


METRIC_NAMES = {
    "interrupts_raised": "InterruptsRaised",
    "interrupts_resumed": "InterruptsResumed",
    "interrupts_expired": "InterruptsExpired",
    "calls_voided": "CallsVoided",
    "decisions_delivered": "DecisionsDelivered",
    "decisions_deferred": "DecisionsDeferred",
}


def record_handler(record: Record) -> None:
    message = parse_body(record["body"])
    logger.append_keys(session_id=message.get("session_id"), interrupt_id=message.get("interrupt_id"))
    logger.info("work", extra={"kind": message.get("kind"), "receive_count": receive_count(record)})
    if message.get("kind") == "notify":  # a webhook retry's durable timer fired
        get_notifier().retry(message)
        return
    get_runner().handle(message)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    run = get_runner()
    run.counters.counts.clear()
    run.counters.timings.clear()
    out = process_fifo_batch(event, record_handler, logger)
    for name, value in run.counters.counts.items():
        if name in METRIC_NAMES:
            metrics.add_metric(name=METRIC_NAMES[name], unit=MetricUnit.Count, value=value)
    for millis in run.counters.timings.get("decision_latency_ms", []):
        metrics.add_metric(name="DecisionLatency", unit=MetricUnit.Milliseconds, value=round(millis, 2))
    return out
