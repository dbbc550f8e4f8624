"""`ports.Traces` in memory: the hops kept as spans and found as X-Ray finds them (aws/traces.py),
by their `tenant` and `session_id` annotations, within the window asked for. X-Ray finds a trace
that lies in the window and keeps its session's hops; the twin keeps each hop that lies in it:
the same answer for a turn wholly inside the window or wholly outside it."""

from __future__ import annotations

import threading

from holdpoint.ports import Span


class MemoryTraces:
    """The spans kept (`keep`), in the order kept; a session's come back soonest first."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._lock = threading.Lock()

    def keep(self, span: Span) -> None:
        with self._lock:
            self.spans.append(span)

    def of_session(self, tenant: str, session_id: str, since: float, until: float) -> list[Span]:
        with self._lock:
            found = [span for span in self.spans if span.annotations.get("tenant") == tenant
                     and span.annotations.get("session_id") == session_id and since <= span.start
                     and span.end <= until]
        return sorted(found, key=lambda span: span.start)
