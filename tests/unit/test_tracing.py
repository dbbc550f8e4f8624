"""Issue item 7, "one trace per session": the hop (holdpoint/tracing.py) continues the trace its
input carries, every message it sends carries the hop on, and an HTTPS worker gets it as W3C
`traceparent`; with tracing off nothing is made, sent or imported."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint import tracing
from holdpoint.core.agent_config import WorkerConfig
from holdpoint.core.traces import timeline
from holdpoint.ports import Span
from tests.conftest import ROOT

ROOT_ID = "1-5759e988-bd862e3fe1be46a994272793"


@pytest.fixture
def daemon(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A UDP socket where the X-Ray daemon listens: what a hop sends arrives here."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(10)
    monkeypatch.setenv("AWS_XRAY_DAEMON_ADDRESS", f"127.0.0.1:{sock.getsockname()[1]}")
    monkeypatch.delenv("POWERTOOLS_TRACE_DISABLED", raising=False)
    monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    yield sock
    sock.close()


def received(sock: socket.socket) -> dict[str, Any]:
    head, _, doc = sock.recv(65_535).decode().partition("\n")
    assert json.loads(head) == {"format": "json", "version": 1}  # the daemon's protocol
    return dict(json.loads(doc))


def test_item7_a_hop_continues_the_trace_it_carries_and_sends_its_segment(daemon: socket.socket) -> None:
    with tracing.hop("engine", f"Root={ROOT_ID};Parent=53995c3f42cd8ad8;Sampled=1", tenant="t",
                     session_id="s", kind="wake") as hop:
        assert hop is not None
        assert tracing.outgoing() == f"Root={ROOT_ID};Parent={hop.id};Sampled=1"
        assert tracing.traceparent() == f"00-5759e988bd862e3fe1be46a994272793-{hop.id}-01"
    doc = received(daemon)
    assert (doc["trace_id"], doc["parent_id"], doc["id"], doc["name"]) == (ROOT_ID, "53995c3f42cd8ad8", hop.id,
                                                                           "engine")
    assert doc["annotations"] == {"tenant": "t", "session_id": "s", "kind": "wake"}
    assert doc["end_time"] >= doc["start_time"]
    assert tracing.outgoing() is None  # outside a hop nothing is carried


def test_item7_a_first_hop_continues_the_invocations_own_trace(daemon: socket.socket,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_X_AMZN_TRACE_ID", f"Root={ROOT_ID};Parent=1111111111111111;Sampled=1")
    with tracing.hop("api"):
        pass
    doc = received(daemon)
    assert (doc["trace_id"], doc["parent_id"]) == (ROOT_ID, "1111111111111111")


def test_item7_the_resume_joins_the_parked_turns_trace(daemon: socket.socket) -> None:
    with tracing.hop("resume") as hop:
        assert hop is not None
        tracing.adopt(f"Root={ROOT_ID};Parent=2222222222222222;Sampled=1")
        assert tracing.outgoing() == f"Root={ROOT_ID};Parent={hop.id};Sampled=1"
    doc = received(daemon)
    assert (doc["trace_id"], doc["parent_id"]) == (ROOT_ID, "2222222222222222")


def test_item7_an_unsampled_trace_sends_and_carries_nothing(daemon: socket.socket) -> None:
    daemon.settimeout(0.2)
    with tracing.hop("engine", f"Root={ROOT_ID};Parent=53995c3f42cd8ad8;Sampled=0"):
        assert tracing.outgoing() is None and tracing.traceparent() is None
    with pytest.raises(TimeoutError):
        daemon.recv(65_535)


def test_item7_a_failed_hop_is_marked_a_fault(daemon: socket.socket) -> None:
    with pytest.raises(RuntimeError), tracing.hop("engine"):
        raise RuntimeError("boom")
    assert received(daemon)["fault"] is True


def test_item7_tracing_off_makes_no_hop(monkeypatch: pytest.MonkeyPatch, daemon: socket.socket) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    with tracing.hop("api") as hop:
        assert hop is None and tracing.outgoing() is None and tracing.traceparent() is None


@pytest.mark.parametrize("traced", [False, True], ids=["off", "on"])
def test_item7_a_handler_never_imports_the_xray_sdk(traced: bool) -> None:
    """Powertools' Tracer runs on Holdpoint's provider: on or off, a handler's load and a hop import
    nothing of the X-Ray SDK (which Lambda's runtime lacks; its import costs ~8 % of a cold start)."""
    probe = ("import sys\nfrom holdpoint import tracing\n"
             "handler = tracing.capture(lambda e, c: None)\n"
             "with tracing.hop('api'):\n    handler({}, None)\n"
             "print(tracing.tracer() is not None, any(m.startswith('aws_xray_sdk') for m in sys.modules))")
    env = {"PYTHONPATH": str(ROOT / "layers" / "core"), "PATH": "/usr/bin:/bin",
           **({"AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:9", "LAMBDA_TASK_ROOT": "/tmp"} if traced else {})}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(traced), "False"]


def test_item7_powertools_tracer_sends_the_handlers_subsegment_and_the_hop_nests_in_it(
        daemon: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_X_AMZN_TRACE_ID", f"Root={ROOT_ID};Parent=3333333333333333;Sampled=1")

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        with tracing.hop("api", tenant="t"):
            return {"statusCode": 200}

    assert tracing.capture(handler)({}, None) == {"statusCode": 200}
    hop_doc, sub = received(daemon), received(daemon)  # the hop ends first
    assert (sub["type"], sub["name"], sub["trace_id"], sub["parent_id"]) == (
        "subsegment", "## handler", ROOT_ID, "3333333333333333")
    assert {"ColdStart", "tenant"} <= set(sub["annotations"])  # Powertools' own, and the hop's
    assert (hop_doc["trace_id"], hop_doc["parent_id"]) == (ROOT_ID, sub["id"])


def test_item7_a_handler_that_raises_under_the_tracer_raises_its_own_error_and_sends_a_fault(
        daemon: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    """Powertools keeps the exception object itself in the subsegment's metadata; the segment is still
    sent (the object as text), and the handler's own error, not the sender's, reaches the runtime."""
    monkeypatch.setenv("_X_AMZN_TRACE_ID", f"Root={ROOT_ID};Parent=3333333333333333;Sampled=1")

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        tracing.capture(handler)({}, None)
    sub = received(daemon)
    assert sub["fault"] is True and "boom" in json.dumps(sub["metadata"])


def test_item7_kicks_and_wakes_carry_the_hop_as_their_aws_trace_header(aws: dict[str, str],
                                                                        daemon: socket.socket) -> None:
    import boto3

    from holdpoint.aws.queue import WorkQueue

    queue = WorkQueue()
    with tracing.hop("api") as hop:
        assert hop is not None
        queue.kick("t", "s", 1)
        queue.wake("t", "s", "int-1", "dedup", 1)
    sqs = boto3.client("sqs", region_name="us-east-1")
    got = sqs.receive_message(QueueUrl=aws["WORK_QUEUE_URL"], MaxNumberOfMessages=10,
                              MessageSystemAttributeNames=["AWSTraceHeader"])["Messages"]
    headers = {m["Attributes"].get("AWSTraceHeader") for m in got}
    assert headers == {f"Root={hop.header.root};Parent={hop.id};Sampled=1"}


def test_item7_an_https_worker_call_carries_traceparent(daemon: socket.socket, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from holdpoint.outbound import workers

    sent: dict[str, str] = {}

    class Answer:
        status = 200

        def read(self) -> bytes:
            return b'{"actions": []}'

        def __enter__(self) -> Answer:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def urlopen(req: Any, field: str, timeout: float) -> Answer:
        sent.update({k.lower(): v for k, v in req.header_items()})
        return Answer()

    monkeypatch.setattr(workers.netguard, "urlopen", urlopen)
    with tracing.hop("engine", f"Root={ROOT_ID};Parent=53995c3f42cd8ad8;Sampled=1") as hop:
        assert hop is not None
        workers.call_https(WorkerConfig(url="https://worker.example/"), {"trigger": {}})
    assert sent["traceparent"] == f"00-5759e988bd862e3fe1be46a994272793-{hop.id}-01"


def test_item7_the_timeline_orders_each_traces_hops_from_its_first() -> None:
    spans = [Span(ROOT_ID, "b", "a", "engine", 10.5, 10.75, {"kind": "kick"}),
             Span(ROOT_ID, "a", None, "api", 10.0, 10.25, {}),
             Span("1-5759e988-000000000000000000000000", "c", None, "api", 5.0, 5.5, {})]
    [older, turn] = timeline(spans)
    assert older["trace_id"].endswith("0000")
    assert [(h["name"], h["start_ms"], h["duration_ms"]) for h in turn["hops"]] == [
        ("api", 0.0, 250.0), ("engine kick", 500.0, 250.0)]
    assert turn["duration_ms"] == 750.0
