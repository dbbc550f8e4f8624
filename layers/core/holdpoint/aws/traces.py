"""`ports.Traces` on X-Ray: a session's hops found by their annotations (GetTraceSummaries with a
filter expression, in windows of at most 6 hours, X-Ray's longest for one call), then the
traces' segments (BatchGetTraces, 5 ids a call); only the hops themselves are kept (segments
named by Holdpoint's `tracing.hop` carry `session_id`), not the Lambda and AWS SDK segments
around them."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.aws import clients
from holdpoint.ports import Span

WINDOW_SECS = 6 * 3600
BATCH = 5


def _quoted(value: str) -> str:
    return json.dumps(value)  # a JSON string is X-Ray's quoted string (ids never hold a quote anyway)


class XRayTraces:
    def __init__(self, client: Any = None) -> None:
        self.client = client or clients.client("xray")

    def trace_ids(self, tenant: str, session_id: str, since: float, until: float) -> list[str]:
        expression = f"annotation.tenant = {_quoted(tenant)} AND annotation.session_id = {_quoted(session_id)}"
        found: list[str] = []
        start = since
        while start < until:
            end = min(until, start + WINDOW_SECS)
            token: str | None = None
            while True:
                page = self.client.get_trace_summaries(StartTime=start, EndTime=end, FilterExpression=expression,
                                                       **({"NextToken": token} if token else {}))
                found += [s["Id"] for s in page.get("TraceSummaries", []) if s["Id"] not in found]
                token = page.get("NextToken")
                if not token:
                    break
            start = end
        return found

    def of_session(self, tenant: str, session_id: str, since: float, until: float) -> list[Span]:
        ids = self.trace_ids(tenant, session_id, since, until)
        spans: list[Span] = []
        for at in range(0, len(ids), BATCH):
            out = self.client.batch_get_traces(TraceIds=ids[at:at + BATCH])
            for trace in out.get("Traces", []):
                spans += [span for segment in trace.get("Segments", [])
                          if (span := span_of(json.loads(segment["Document"]), tenant, session_id))]
        return spans


def span_of(doc: dict[str, Any], tenant: str, session_id: str) -> Span | None:
    """A hop of this session (a segment annotated with it), or None for any other segment."""
    notes = doc.get("annotations") or {}
    if notes.get("session_id") != session_id or notes.get("tenant") != tenant or "end_time" not in doc:
        return None
    return Span(trace_id=str(doc["trace_id"]), id=str(doc["id"]), parent_id=doc.get("parent_id"),
                name=str(doc["name"]), start=float(doc["start_time"]), end=float(doc["end_time"]),
                annotations={str(k): str(v) for k, v in notes.items()})
