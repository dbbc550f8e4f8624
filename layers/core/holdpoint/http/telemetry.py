"""The logger and metrics every HTTP route shares (Powertools; the handlers flush them)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger()  # service from POWERTOOLS_SERVICE_NAME; the layer's modules log as its children
metrics = Metrics(namespace="Holdpoint")


def count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
