"""Engine Lambda: consumes the FIFO work queue, one session step loop per message (and the retries
of notification webhooks, which come back on it from their durable timers)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from holdpoint.coldstart import Deferred, loading


def step_loop() -> ModuleType:
    from holdpoint.services import runner  # the core rules and the wire models, with pydantic

    return runner


with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit

    from holdpoint import tracing
    from holdpoint.assembly import get_notifier, get_runner
    from holdpoint.aws.fifobatch import Record, process_fifo_batch, receive_count
    from holdpoint.aws.queue import parse_message
    from holdpoint.core.messages import NotifyRetry, WorkMessage

    logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer logs as its child
    metrics = Metrics(namespace="Holdpoint", service="engine")
    # The step loop's modules load with the first batch, inside loading() (bench/README.md (c));
    # `get_runner()` builds the runner on them then, as it always did.
    steps = Deferred(step_loop)


METRIC_NAMES = {
    "interrupts_raised": "InterruptsRaised",
    "interrupts_resumed": "InterruptsResumed",
    "interrupts_expired": "InterruptsExpired",
    "calls_voided": "CallsVoided",
    "decisions_delivered": "DecisionsDelivered",
    "decisions_deferred": "DecisionsDeferred",
    "parks_waiting_for_capacity": "ParksWaitingForCapacity",  # StartExecution refused; alarmed in template.yaml
    "parks_started_after_wait": "ParksStartedAfterWait",
    "llm_streams": "LlmStreams",  # LLM calls streamed to a session's WebSocket followers
    "llm_streams_stopped": "LlmStreamsStopped",  # of those, stopped because the call was voided
}


def record_handler(record: Record) -> None:
    """One work message as one hop of its session's trace, continuing the trace it carries."""
    message = parse_message(record["body"])  # once, here: everything after takes its class
    logger.append_keys(session_id=message.session_id, interrupt_id=getattr(message, "interrupt_id", None))
    logger.info("work", extra={"kind": message.KIND, "receive_count": receive_count(record)})
    with tracing.hop("engine", carried_trace(record), tenant=message.tenant, session_id=message.session_id,
                     kind=message.KIND):
        dispatch(message)


def carried_trace(record: Record) -> str | None:
    """The trace a record continues: its `AWSTraceHeader` (Holdpoint's own sends set it), or the
    `trace` ParkBranch's messages carry in their body (its SQS integration sets no attribute)."""
    header = (record.get("attributes") or {}).get("AWSTraceHeader")
    if header:
        return str(header)
    body = record.get("body") or ""
    if '"trace"' not in body:
        return None
    trace = json.loads(body).get("trace")
    return trace if isinstance(trace, str) and trace else None


def dispatch(message: WorkMessage) -> None:
    if isinstance(message, NotifyRetry):  # a webhook retry's durable timer fired
        get_notifier().retry(message)
        return
    get_runner().handle(message)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
@tracing.capture
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    steps.get()
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
