"""Traces: the hops of a session's turns as the tracing backend stored them (holdpoint/tracing.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Span:
    """One hop of a trace as the tracing backend stored it: its trace, ids, name, epoch times and
    annotations (`kind`: the work message an engine hop ran)."""

    trace_id: str
    id: str
    parent_id: str | None
    name: str
    start: float
    end: float
    annotations: dict[str, str]


class Traces(Protocol):
    """A session's hops, found by their `tenant` and `session_id` annotations (holdpoint/tracing.py)."""

    def of_session(self, tenant: str, session_id: str, since: float, until: float) -> list[Span]: ...
