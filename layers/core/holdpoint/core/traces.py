"""A session's traces as a timeline: each trace's hops in the order they started, each with its
offset from the trace's first hop and its duration (what `holdpoint trace SESSION` prints)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from holdpoint.core.jsontypes import JsonObject


class SpanLike(Protocol):
    """A stored hop (`ports.Span`), read only."""

    @property
    def trace_id(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def annotations(self) -> dict[str, str]: ...


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def hop(span: SpanLike, origin: float) -> JsonObject:
    """One hop: `engine` hops are named by the work they ran (`engine kick`, `engine wake`)."""
    kind = span.annotations.get("kind")
    return {"name": f"{span.name} {kind}" if kind else span.name, "id": span.id, "parent_id": span.parent_id,
            "start_ms": _ms(span.start - origin), "duration_ms": _ms(span.end - span.start)}


def timeline(spans: Iterable[SpanLike]) -> list[JsonObject]:
    """The traces, oldest first, each `{trace_id, started_at, duration_ms, hops}`."""
    by_trace: dict[str, list[SpanLike]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    ordered = sorted((sorted(members, key=lambda s: (s.start, s.end)) for members in by_trace.values()),
                     key=lambda members: members[0].start)
    return [{"trace_id": members[0].trace_id, "started_at": members[0].start,
             "duration_ms": _ms(max(s.end for s in members) - members[0].start),
             "hops": [hop(s, members[0].start) for s in members]} for members in ordered]
