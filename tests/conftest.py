"""Shared fixtures. Unit tests run against moto's in-process AWS."""

from __future__ import annotations

import functools
import gc
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import moto.core.responses as moto_responses
import pytest

ROOT = Path(__file__).resolve().parent.parent

for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
                   "POWERTOOLS_METRICS_NAMESPACE": "Holdpoint", "POWERTOOLS_DEV": "false"}.items():
    os.environ.setdefault(key, value)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the collection imported (moto, botocore's models, hypothesis, the handlers' modules) is
    live for the whole run: frozen out of the collector. And a full collection runs after 100
    collections of the middle generation, not 10: the tests load modules lazily too (moto's
    backends, botocore's service models), and each full collection walked all of it, about a
    quarter of the unit tier's CPU. The young generations collect a test's cycles as before."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The order's seed, last (pytest-randomly prints it in the header, which `-q` hides): the
    order of a failing run comes back with `make test SEED=N` (or `--randomly-seed=N`)."""
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"tests in a shuffled order, --randomly-seed={seed}: replay it with SEED={seed}")


def _on_a_wide_frame(run: Callable[[], object]) -> object:
    return run()


_on_a_wide_frame.__code__ = _on_a_wide_frame.__code__.replace(co_stacksize=1 << 17)
"""CPython 3.11 keeps the Python call stack in 16 KiB chunks, mapped when a call crosses into a
new one and unmapped when it returns out of it: a loop whose calls cross a chunk's edge maps and
unmaps 16 KiB each time (four page faults). Under pytest-xdist the tests run a few frames deeper
(execnet's worker loop), which put that edge inside moto's and hypothesis's hot loops: about 2
million page faults and 15 s of system time in the unit tier (`strace -f -c`: 16 KiB mmap/munmap).
A frame of 1 MiB (its slots are never touched, so never faulted in) gets a 2 MiB chunk of its own;
a test runs on it, in the other 1 MiB, and crosses no edge unless it nests some thousands of calls
deep."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool:
    """pytest's own protocol (setup, call, teardown, each reported), run on the wide frame."""
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    _on_a_wide_frame(lambda: runtestprotocol(item, nextitem=nextitem))
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


HISTORY = {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["status", "agent_id", "reason", "expires_at"]}
"""The History index's projection, as template.yaml declares it."""


def make_resources() -> dict[str, str]:
    """Inside moto's in-process mock: the table, queue and state machines the template declares."""
    ddb = boto3.client("dynamodb")
    ddb.create_table(
        TableName="holdpoint", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"}
                              for a in ("PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK",
                                        "GSI4PK", "GSI4SK")],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {"IndexName": "Inbox", "Projection": {"ProjectionType": "ALL"}, "KeySchema": [
                {"AttributeName": "GSI1PK", "KeyType": "HASH"}, {"AttributeName": "GSI1SK", "KeyType": "RANGE"}]},
            {"IndexName": "Sessions", "KeySchema": [
                {"AttributeName": "GSI2PK", "KeyType": "HASH"}, {"AttributeName": "GSI2SK", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "INCLUDE",
                            "NonKeyAttributes": ["agent_id", "status", "owner", "sub_agent"]}},
            {"IndexName": "History", "Projection": HISTORY, "KeySchema": [
                {"AttributeName": "GSI3PK", "KeyType": "HASH"}, {"AttributeName": "GSI3SK", "KeyType": "RANGE"}]},
            {"IndexName": "Attention", "KeySchema": [
                {"AttributeName": "GSI4PK", "KeyType": "HASH"}, {"AttributeName": "GSI4SK", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "INCLUDE",
                            "NonKeyAttributes": ["agent_id", "status", "owner", "sub_agent", "attention", "GSI2SK"]}}])
    sqs = boto3.client("sqs")
    queue = sqs.create_queue(QueueName="work.fifo", Attributes={"FifoQueue": "true",
                                                                "ContentBasedDeduplication": "true"})["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    boto3.client("scheduler").create_schedule_group(Name="holdpoint-timers")
    definition = json.dumps({"StartAt": "Park", "States": {"Park": {"Type": "Pass", "End": True}}})
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(name="park", definition=definition,
                                       roleArn="arn:aws:iam::123456789012:role/park")["stateMachineArn"]
    boto3.client("s3").create_bucket(Bucket="holdpoint-payloads")
    key = boto3.client("secretsmanager").create_secret(Name="holdpoint-signing-key",
                                                       SecretString="unit-test-signing-key-0123456789")["ARN"]
    return {"TABLE_NAME": "holdpoint", "WORK_QUEUE_URL": queue, "PARK_STATE_MACHINE_ARN": machine,
            "TIMER_SCHEDULE_GROUP": "holdpoint-timers", "TIMER_TARGET_ARN": queue_arn,
            "TIMER_ROLE_ARN": "arn:aws:iam::123456789012:role/timers", "PAYLOAD_BUCKET": "holdpoint-payloads",
            "JWT_SECRET_ARN": key}


_CLIENTS: dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[Any, Any]] = {}
_REAL_CLIENT = boto3.client
_SHARED_SERVICES = frozenset({"dynamodb", "sqs", "stepfunctions", "s3", "secretsmanager", "scheduler", "events",
                              "cloudformation", "lambda"})


def shared_client(service: str, *args: Any, **kwargs: Any) -> Any:
    """boto3.client, built once per service and options for the whole run. moto intercepts every
    client at botocore's send hook, so a client outlives `mock_aws` sessions safely, and building
    one (loading its service model) was most of each unit test's setup: mock_aws clears boto3's default
    session, so each test's first client of a service made a new session and parsed its JSON again.
    A client is keyed by its Config's identity, and the cache keeps that Config alive, so a later
    Config can never be given the id of a collected one (and another test's retries with it)."""
    if args or service not in _SHARED_SERVICES:
        return _REAL_CLIENT(service, *args, **kwargs)
    key = (service, tuple(sorted((k, id(v) if k == "config" else v) for k, v in kwargs.items())))
    if key not in _CLIENTS:
        _CLIENTS[key] = (kwargs.get("config"), _REAL_CLIENT(service, **kwargs))
    return _CLIENTS[key][1]


_METHOD_NAMES = functools.cache(moto_responses.method_names_from_class)
_UNDERSCORED = functools.cache(moto_responses.camelcase_to_underscores)


def moto_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Inside: moto's in-process AWS with the resources the template declares, for as long as
    `monkeypatch` lasts (a test, or a module's `pytest.MonkeyPatch.context()`)."""
    from botocore.retries.standard import ExponentialBackoff
    from moto import mock_aws

    from holdpoint_local import moto as moto_fixes
    from tests import harness

    moto_fixes.apply()
    monkeypatch.setattr(harness, "BACKEND", "dynamodb")  # a test on moto runs its Harness there too
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setattr(boto3, "client", shared_client)
    # botocore's retries still make every attempt (and a test counts them), without sleeping its
    # jittered backoff between them (1 s, 2 s, 4 s... for a throttle): nothing here is loaded.
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.0)
    # moto lists its response class's methods (inspect.getmembers) and converts the action's name on
    # every request: the same answers each time, for about 3% of the tier's CPU. Each is now worked out once.
    monkeypatch.setattr(moto_responses, "method_names_from_class", _METHOD_NAMES)
    monkeypatch.setattr(moto_responses, "camelcase_to_underscores", _UNDERSCORED)
    with mock_aws():
        env = make_resources()
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        yield env


@pytest.fixture(scope="session", autouse=True)
def slack_retries_do_not_sleep() -> Iterator[None]:
    """slack_sdk retries a refused connection once after its backoff (0.5 s and a jitter of up to
    1 s): the retry is still made (and a test sees it), without the sleep, as botocore's are in
    `moto_aws`. The local stack's own processes are not patched."""
    from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(BackoffRetryIntervalCalculator, "calculate_sleep_duration", lambda self, attempt: 0.0)
        yield


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """moto's in-process AWS with the resources the template declares, one for each test (the
    end-to-end tests use the real ones, created from template.yaml on the moto server)."""
    yield from moto_aws(monkeypatch)


@pytest.fixture
def memory(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The in-memory store and adapters (`holdpoint_local.memory`) for every Harness the test builds
    (one store for the test, as `aws` gives it one table).
    Any AWS call made by mistake goes to a closed port and fails at once. A test of a module on
    memory that asks for `aws` too runs on moto."""
    from tests import harness

    if "aws" in request.fixturenames:
        yield
        return
    from holdpoint_local.memory.store import MemoryStore

    monkeypatch.setattr(harness, "BACKEND", "memory")
    monkeypatch.setattr(harness, "MEMORY", MemoryStore())
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    yield
