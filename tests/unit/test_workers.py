"""Worker transports: the Lambda-ARN worker through botocore's Stubber (moto cannot run Lambdas
without Docker), and failures that must retry the decision."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from holdpoint.core.agent_config import AgentConfig
from holdpoint.outbound import workers
from tests.harness import Harness

ARN = "arn:aws:lambda:us-east-1:123456789012:function:my-worker"


def payload(obj: Any) -> StreamingBody:
    raw = json.dumps(obj).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Stubber:
    monkeypatch.setenv("HOLDPOINT_ACCOUNT_ID", "123456789012")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("WORKER_LAMBDA_ALLOWLIST", "arn:aws:lambda:us-east-1:123456789012:function:my-*")
    client = boto3.client("lambda", region_name="us-east-1")
    stub = Stubber(client)
    monkeypatch.setattr(workers, "lambda_client", lambda: client)
    return stub

LAMBDA_AGENT = AgentConfig.model_validate({"worker": {"lambda_arn": ARN}})


def test_lambda_worker_is_invoked_synchronously_with_the_decision(stubbed: Stubber) -> None:
    request = {"trigger": {"type": "session.start"}, "proposed": {"agent": {}}, "decision_id": "d1"}
    stubbed.add_response("invoke", {"StatusCode": 200, "Payload": payload({"state": {"n": 1}})},
                         {"FunctionName": ARN, "InvocationType": "RequestResponse",
                          "Payload": json.dumps(request).encode()})
    with stubbed:
        assert workers.decide(LAMBDA_AGENT, request) == {"state": {"n": 1}}
    stubbed.assert_no_pending_responses()


def test_lambda_worker_errors_and_throttles_retry_the_decision(stubbed: Stubber) -> None:
    stubbed.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload({})})
    stubbed.add_client_error("invoke", service_error_code="TooManyRequestsException", http_status_code=429)
    stubbed.add_response("invoke", {"StatusCode": 200, "Payload": payload(["not", "an", "object"])})
    with stubbed:
        for _ in range(3):
            with pytest.raises(workers.WorkerUnavailable):
                workers.decide(LAMBDA_AGENT, {"proposed": {}})


@pytest.mark.usefixtures("aws")
def test_https_worker_5xx_and_bad_json_are_retried_not_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.answering import answering

    server = answering([(503, b"busy"), (200, b"{not json"), (200, b"{}")])
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    try:
        h = Harness(agent={"worker": {"url": f"http://127.0.0.1:{server.server_address[1]}/"}})
        h.say("say hi")
        for step in (3, 10, 30, 60):
            base = h.runner.clock()
            h.runner.clock = lambda base=base, step=step: base + step
            h.settle()
        retries = h.events("decision.retry")
        assert retries[0]["data"]["error"] == "worker answered HTTP 503"
        assert "invalid JSON" in retries[1]["data"]["error"]
        assert not h.events("decision.failed")
    finally:
        server.shutdown()


# --- finding 1 (code execution): only code-registered callables, only allow-listed Lambdas ----------


@pytest.mark.parametrize("name", ["json:dumps", "os:system", "builtins:print", "this:s", "subprocess:run"])
def test_code_execution_unregistered_python_worker_imports_and_runs_nothing(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    imported: list[str] = []
    monkeypatch.setattr(importlib, "import_module", lambda module, *a: imported.append(module))
    monkeypatch.delitem(sys.modules, "this", raising=False)
    with pytest.raises(workers.WorkerUnavailable, match="no in-process worker is registered"):
        workers.decide(AgentConfig.model_validate({"worker": {"python": name}}), {"proposed": {}})
    assert imported == [] and "this" not in sys.modules


@pytest.mark.usefixtures("aws")
def test_code_execution_stored_python_worker_fails_as_worker_unavailable() -> None:
    h = Harness(agent={"worker": {"python": "builtins:print"}})
    h.say("say hi")
    retries = h.events("decision.retry")
    assert retries and "no in-process worker is registered" in retries[0]["data"]["error"]


@pytest.mark.parametrize(("arn", "why"), [
    ("arn:aws:lambda:us-east-1:999999999999:function:my-worker", "account and region"),
    ("arn:aws:lambda:eu-west-1:123456789012:function:my-worker", "account and region"),
    ("arn:aws:lambda:us-east-1:123456789012:function:holdpoint-EngineFunction", "WORKER_LAMBDA_ALLOWLIST"),
    ("my-worker", "function ARN"),
    ("arn:aws:lambda:us-east-1:123456789012:function:my-worker:$LATEST/../x", "function ARN"),
])
def test_code_execution_lambda_outside_the_allowlist_is_never_invoked(arn: str, why: str, stubbed: Stubber) -> None:
    # No response queued: an invoke would fail the test with a different error.
    with stubbed, pytest.raises(workers.WorkerUnavailable, match=why):
        workers.decide(AgentConfig.model_validate({"worker": {"lambda_arn": arn}}), {"proposed": {}})


def test_code_execution_empty_lambda_allowlist_allows_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ACCOUNT_ID", "123456789012")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("WORKER_LAMBDA_ALLOWLIST", "")
    assert workers.check_lambda_arn(ARN) == "worker.lambda_arn is not allowed by WORKER_LAMBDA_ALLOWLIST"
    monkeypatch.setenv("WORKER_LAMBDA_ALLOWLIST", "arn:aws:lambda:us-east-1:123456789012:function:other,"
                       "arn:aws:lambda:us-east-1:123456789012:function:my-*")
    assert workers.check_lambda_arn(ARN) is None
    assert workers.check_lambda_arn(ARN + ":live") is None


@pytest.mark.parametrize("answer", [b'{"state": NaN}', b'{"state": {"n": Infinity}}', b'{"actions": [], "actions": []}',
                                    b'{"state": "\\ud800"}', b'{"state": 1e999}'])
def test_a_worker_answer_that_is_not_strict_json_is_unusable(answer: bytes) -> None:
    """Stored, it would be served to clients that cannot parse it back; the decision retries."""
    with pytest.raises(workers.WorkerUnavailable, match="invalid JSON"):
        workers._parse(answer)
