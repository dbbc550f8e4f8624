"""A session's traces (GET /v1/sessions/{id}/trace, `holdpoint trace SESSION`): the hops the
tracing backend stored for it, as a timeline, to a caller who may read the session."""

from __future__ import annotations

from typing import Any

from holdpoint.core.traces import timeline
from holdpoint.ports import SessionStore, Traces
from holdpoint.services.caller import Caller
from holdpoint.services.streams import visible

MAX_HOURS = 24 * 30  # X-Ray keeps traces 30 days


def session_traces(store: SessionStore, traces: Traces, caller: Caller, session_id: str, now: float,
                   hours: int = 24) -> dict[str, Any]:
    """404 unless the caller may read the session; then its traces of the last `hours` hours."""
    visible(store, caller, session_id)
    since = now - min(hours, MAX_HOURS) * 3600
    spans = traces.of_session(caller.tenant, session_id, since, now + 60)
    return {"session_id": session_id, "traces": timeline(spans)}
