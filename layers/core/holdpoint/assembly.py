"""The services, assembled on the AWS adapters: what the entry points (Lambda handlers, the admin
CLI, the local stack and the tests that run the real thing) build and share."""

from __future__ import annotations

from typing import Any

from holdpoint import llm
from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import WorkQueue
from holdpoint.aws.store import Store
from holdpoint.aws.timers import Timers
from holdpoint.outbound import workers
from holdpoint.services.runner import Runner


def runner(store: Store | None = None, parking: Parking | None = None, queue: WorkQueue | None = None,
           timers: Timers | None = None, **options: Any) -> Runner:
    """The engine on DynamoDB, Step Functions and SQS, with the worker transports and LLM providers."""
    return Runner(store or Store(), parking or Parking(), queue or WorkQueue(), timers or Timers(),
                  worker=workers.decide, llm=llm.complete, **options)
