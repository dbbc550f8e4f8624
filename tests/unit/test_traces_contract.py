"""The `ports.Traces` contract (docs/OPERATIONS.md, "Traces"), held by the X-Ray traces on moto
(aws/traces.py) and their in-memory twin (memory/traces.py): a session's hops, found by their
`tenant` and `session_id` annotations, come back as they were stored when their turn lies within
[since, until]; another tenant's or session's hops never do, nor a segment without the annotations
(a Lambda's own) in the same trace, nor a turn wholly outside the window.

On moto each hop is put (PutTraceSegments) as the document `tracing.Hop` writes, the one the X-Ray
daemon forwards; moto's GetTraceSummaries filters on annotations with holdpoint_local's fix 25. A
turn straddling an end of the window is no clause: X-Ray finds traces and the twin finds hops."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from holdpoint import tracing
from holdpoint.ports import Span
from holdpoint_local.memory.traces import MemoryTraces
from tests.twins import side

T0 = 1_800_000_000.0
HOUR = 3600.0

Put = Callable[[Span], None]


def _to_xray(span: Span) -> None:
    """The hop's segment document as `tracing.hop` sends it, put on moto's X-Ray."""
    hop = tracing.Hop(span.name, tracing.Header(span.trace_id, span.parent_id), id=span.id, start=span.start,
                      annotations=dict(span.annotations))
    boto3.client("xray").put_trace_segments(
        TraceSegmentDocuments=[json.dumps(hop.document(span.end))])


def _in_memory() -> tuple[Any, Put]:
    memory = MemoryTraces()
    return memory, memory.keep


def _on_xray() -> tuple[Any, Put]:
    from holdpoint.aws.traces import XRayTraces

    return XRayTraces(), _to_xray


@pytest.fixture(params=["memory", "xray"])
def traces(request: pytest.FixtureRequest) -> tuple[Any, Put]:
    """Traces of one kind, and how a hop is stored in them."""
    return side(request, _in_memory, _on_xray)


def root(at: float) -> str:
    return f"1-{int(at):08x}-{os.urandom(12).hex()}"


def hop(trace: str, at: float, name: str = "engine.step", parent: str | None = None, **notes: str) -> Span:
    """A hop of `t1`'s session `s1` (unless `notes` say otherwise) lasting a second from `at`."""
    annotations = {"tenant": "t1", "session_id": "s1", "kind": "kick", **notes}
    return Span(trace, os.urandom(8).hex(), parent, name, at, at + 1.0, {k: v for k, v in annotations.items() if v})


def turn(put: Put, at: float, **notes: str) -> list[Span]:
    """One turn: the submit's hop, then the engine's under it, in one trace."""
    trace = root(at)
    first = hop(trace, at, "api.submit", **notes)
    spans = [first, hop(trace, at + 2, "engine.step", first.id, **notes)]
    for span in spans:
        put(span)
    return spans


def by_start(spans: list[Span]) -> list[Span]:
    return sorted(spans, key=lambda span: (span.start, span.id))


def test_trace_a_sessions_hops_come_back_as_stored(traces: tuple[Any, Put]) -> None:
    reader, put = traces
    spans = turn(put, T0 + 60) + turn(put, T0 + 600)
    assert by_start(reader.of_session("t1", "s1", T0, T0 + HOUR)) == by_start(spans)
    assert reader.of_session("t1", "s1", T0, T0 + HOUR)[0].parent_id is None


def test_trace_another_tenants_or_sessions_hops_never_come_back(traces: tuple[Any, Put]) -> None:
    reader, put = traces
    mine = turn(put, T0 + 60)
    turn(put, T0 + 120, tenant="t2")
    turn(put, T0 + 180, session_id="s2")
    sub = hop(mine[0].trace_id, T0 + 64, "engine.step", mine[1].id, session_id="s1-child")  # same trace
    lambda_own = hop(mine[0].trace_id, T0 + 61, "LiveFunction", tenant="", session_id="")  # no annotations
    put(sub)
    put(lambda_own)
    assert by_start(reader.of_session("t1", "s1", T0, T0 + HOUR)) == by_start(mine)
    assert reader.of_session("t2", "s2", T0, T0 + HOUR) == []
    assert reader.of_session("t1", "s1-child", T0, T0 + HOUR) == [sub]


def test_trace_a_turn_outside_the_window_does_not_come_back(traces: tuple[Any, Put]) -> None:
    """Across windows longer than one X-Ray call's six hours."""
    reader, put = traces
    turn(put, T0 - HOUR)
    inside = turn(put, T0 + 13 * HOUR) + turn(put, T0 + 60)
    turn(put, T0 + 15 * HOUR)
    assert by_start(reader.of_session("t1", "s1", T0, T0 + 14 * HOUR)) == by_start(inside)
    assert reader.of_session("t1", "s1", T0 + 2 * HOUR, T0 + 12 * HOUR) == []
