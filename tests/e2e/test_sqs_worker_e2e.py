"""An SQS-driven worker on the local stack (PROTOCOL.md §2.1, `worker.queue`): each decision is sent,
signed, to the customer's FIFO queue and deferred; the customer's function (the SDK's
`Worker.sqs_handler`, the seed's `decide`, run by the local stack's SQS event source mapping as
Lambda runs it) answers through `POST /v1/workers/submit` with a machine key. The seed scenario
runs end to end (approved: the email is sent; denied: it is not); a queue the deployment does not
admit is refused where it is declared. Select with `pytest -k sqs_worker`."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from holdpoint_sdk.client import Client
from tests.customer import CustomerFunction, triggered_by
from tests.stack import SCRIPT, Api, seed_worker

ADMITTED = "arn:aws:sqs:*:*:workers-*"


@pytest.fixture
def stack(local_stack_factory: Any, worker: Any) -> Any:
    """The local stack deployed with `TenantQueueArnPattern` admitting the customer's `workers-*` queues."""
    return local_stack_factory(parameters={"TenantQueueArnPattern": ADMITTED},
                               extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})


@pytest.fixture
def sqs_worker(stack: Any, api: Api) -> Iterator[CustomerFunction]:
    """The customer's FIFO queue, its function polling it, and the agent declared on it."""
    name = f"workers-{uuid.uuid4().hex[:8]}.fifo"
    url = stack.client("sqs").create_queue(QueueName=name, Attributes={"FifoQueue": "true"})["QueueUrl"]
    key = f"hp_machine_{uuid.uuid4().hex[:12]}"
    put_api_key(stack.env["TABLE_NAME"], key, stack.tenant, "sqs-worker", "machine")
    worker = seed_worker.worker(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    with triggered_by(stack, url, worker.sqs_handler(Client(stack.base_url, key)), "customer-worker") as function:
        api.ok("PUT", "/v1/agents/assistant", {
            "llm": {"provider": "scripted", "script": SCRIPT},
            "tools": [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}],
            "worker": {"queue": url, "secret": "env:HOLDPOINT_E2E_WORKER_SECRET"}})
        yield function


@pytest.mark.parametrize(("answer", "result"), [(True, "sent"), (False, "declined")])
def test_sqs_worker_runs_the_seed_scenario_through_its_queue(api: Api, sqs_worker: CustomerFunction,
                                                             answer: bool, result: str) -> None:
    sid = api.start("Email Bob")
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    assert api.resume(sid, interrupt["interrupt_id"], {"approved": answer}).status_code == 200
    done = api.wait_status(sid, "done")
    tool = [m for m in done["messages"] if m["role"] == "tool"]
    assert tool and result in str(tool[-1]["content"])
    deferred = [e for e in api.events(sid) if e["type"] == "decision.deferred"]
    assert deferred and sqs_worker.records >= len(deferred)  # every decision went through the queue


@pytest.mark.parametrize("queue", ["https://sqs.us-east-1.amazonaws.com/123456789012/other-queue",
                                   "https://sqs.us-east-1.amazonaws.com/999999999999/workers-x",
                                   "http://169.254.169.254/latest/workers-x"])
def test_sqs_worker_a_queue_the_deployment_does_not_admit_is_refused_where_declared(api: Api, queue: str) -> None:
    refused = api.req("PUT", "/v1/agents/queued", {"worker": {"queue": queue}})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "worker.queue", refused.text
    assert api.req("GET", "/v1/agents/queued").status_code == 404
