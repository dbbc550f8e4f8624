"""Trace reads bounded (issue: close the holes, item 5). `GET /v1/sessions/{id}/trace?hours=720` once
made 120 sequential X-Ray searches, open to an end user on her own session with no wait lease and
no bound per caller: 16 at once slowed another tenant's plain listing from 29 ms to 10.8 s. Now a
read holds one of the caller's and the tenant's wait leases, as a stream wait does (429 past
either), and an end user reads at most a day back (4 searches).

The hours bound in process against the `Traces` port's twin; the lease over HTTP on the local
stack, the reads held open by a slow X-Ray search so they overlap (the stack's own moto X-Ray)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from holdpoint.services.caller import Caller
from holdpoint.services.traces import END_USER_MAX_HOURS, session_traces
from holdpoint_local.memory.traces import MemoryTraces
from tests.harness import Harness
from tests.security.probes import client_token_api
from tests.security.test_quotas import Limited, idle_session, limited
from tests.waiting import wait_for

__all__ = ["limited"]


class Asked(MemoryTraces):
    """The twin, noting how far back each read looked."""

    def __init__(self) -> None:
        super().__init__()
        self.windows: list[float] = []

    def of_session(self, tenant: str, session_id: str, since: float, until: float) -> list[Any]:
        self.windows.append(until - since)
        return super().of_session(tenant, session_id, since, until)


@pytest.mark.usefixtures("memory")
def test_trace_an_end_user_reads_at_most_a_day_back_and_an_operator_a_month() -> None:
    h = Harness()
    h.caller = Caller("t1", "zoe", "client", own_only=True)
    h.say("say hi")
    traces, now = Asked(), time.time()
    session_traces(h.store, traces, h.caller, h.session_id or "", now, hours=720)
    session_traces(h.store, traces, Caller("t1", "ops", "operator"), h.session_id or "", now, hours=720)
    assert [round(w / 3600) for w in traces.windows] == [END_USER_MAX_HOURS, 720]


def test_trace_reads_hold_a_wait_lease_so_one_caller_cannot_hold_every_instance(
        limited: Limited, monkeypatch: pytest.MonkeyPatch) -> None:
    from holdpoint.aws import traces as xray

    release = threading.Event()
    search = xray.XRayTraces.trace_ids

    def slow(self: Any, *args: Any) -> list[str]:
        release.wait(30)  # X-Ray taking its time: every read overlaps the others
        return search(self, *args)

    monkeypatch.setattr(xray.XRayTraces, "trace_ids", slow)
    stack, api = limited(QuotaStreamWaitsPerCaller=2)
    zoe = client_token_api(stack, "zoe")
    sid = idle_session(zoe)
    with ThreadPoolExecutor(max_workers=6) as pool:
        reads = [pool.submit(zoe.req, "GET", f"/v1/sessions/{sid}/trace?hours=720") for _ in range(6)]
        wait_for(lambda: sum(r.done() for r in reads) >= 4, "four reads answered while two are held")
        refused = [r.result() for r in reads if r.done()]
        assert api.req("GET", "/v1/sessions").status_code == 200  # the tenant is served meanwhile
        release.set()
        answers = [r.result(timeout=60) for r in reads]
    assert [r.status_code for r in refused] == [429] * 4
    assert all(r.json()["error"]["param"] == "stream_waits_per_caller" for r in refused)
    assert sorted(a.status_code for a in answers) == [200, 200, 429, 429, 429, 429]
