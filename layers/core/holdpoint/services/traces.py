"""A session's traces (GET /v1/sessions/{id}/trace, `holdpoint trace SESSION`): the hops the
tracing backend stored for it, as a timeline, to a caller who may read the session."""

from __future__ import annotations

from typing import Any

from holdpoint.core.traces import timeline
from holdpoint.ports import SessionStore, Traces, WaitLeases
from holdpoint.services.caller import Caller
from holdpoint.services.streams import leased, visible

MAX_HOURS = 24 * 30  # X-Ray keeps traces 30 days
END_USER_MAX_HOURS = 24
"""An end user reads at most a day back: a read's cost (one X-Ray search per 6 hours) is hers to pick."""


def session_traces(store: SessionStore, traces: Traces, caller: Caller, session_id: str, now: float,
                   hours: int = 24, leases: WaitLeases | None = None) -> dict[str, Any]:
    """404 unless the caller may read the session; then its traces of the last `hours` hours (at
    most a day for an end user). The search's cost grows with the hours, so it runs holding one of
    the caller's and the tenant's wait leases, as a stream wait does (429 past either limit)."""
    visible(store, caller, session_id)
    back = min(hours, END_USER_MAX_HOURS if caller.own_only else MAX_HOURS)
    spans = leased(leases, caller, lambda: traces.of_session(caller.tenant, session_id, now - back * 3600, now + 60))
    return {"session_id": session_id, "traces": timeline(spans)}
