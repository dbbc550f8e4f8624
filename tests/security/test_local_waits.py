"""One caller's waits starve no one locally either (issue: close the holes, item 8). The local
runtime once gave each function 4 instances, the same as one caller's wait quota: one client
token's four held long-polls took every API instance, and another tenant's `GET /v1/sessions`
waited 23 s behind them. On AWS each wait holds an instance of its own; the local stack now lets the
functions that wait grow by as many instances as waits may be held at once, so the other tenant is
answered while all four waits are still held (a signal, not a time: each wait's future is not done)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from holdpoint.aws.keys import put_api_key
from tests.security.probes import client_token_api
from tests.security.test_quotas import idle_session
from tests.stack import Api, declare_agent
from tests.waiting import wait_for


def test_local_one_callers_held_waits_leave_another_tenant_served(local_stack_factory: Callable[..., Any],
                                                                   worker: tuple[str, Any]) -> None:
    stack = local_stack_factory(extra_env={"POWERTOOLS_METRICS_DISABLED": "true"})  # the runtime's own defaults
    declare_agent(Api(stack.base_url, stack.api_key), worker[0])
    put_api_key(stack.env["TABLE_NAME"], "hp_other_tenant_key", "other", "mallory", "operator")
    other_tenant = Api(stack.base_url, "hp_other_tenant_key")
    zoe = client_token_api(stack, "zoe")
    sid = idle_session(zoe)
    after = zoe.events(sid)[-1]["seq"]
    api = stack.functions["ApiFunction"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        waits = [pool.submit(zoe.req, "GET", f"/v1/sessions/{sid}/events?after_seq={after}&wait=20")
                 for _ in range(4)]
        wait_for(lambda: api.in_flight >= 4, "her four waits held in the API function")
        other = other_tenant.req("GET", "/v1/sessions")
        held = [not w.done() for w in waits]
        assert other.status_code == 200 and all(held), (other.status_code, held)
    assert all(w.result().status_code == 200 for w in waits)
