"""Bad input over HTTP, generated from the OpenAPI document the stack serves: every answer is a
2xx/4xx with a well-formed error body, never a 5xx or a stack trace, and a 4xx records nothing."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.stack import Api

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                   max_size=4), max_leaves=12)
FIELDS = ["type", "agent_id", "message", "messages", "interrupt_id", "payload", "reason", "global", "expires_in",
          "queue", "turn_id", "name", "args", "id", "attempt", "result", "error", "role", "content", "tools",
          "worker", "llm"]
BODIES = st.one_of(
    JSON,
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5),
    st.fixed_dictionaries({"type": st.sampled_from(["client.message", "client.messages", "interrupt.resume",
                                                    "client.action", "tool.result", "nope"])},
                          optional={k: JSON for k in FIELDS[1:8]}),
)
SEGMENT = st.one_of(st.just("ses_missing"), st.text(alphabet="abc-_.:%/ é", min_size=1, max_size=80))


def check(resp: Any) -> None:
    assert resp.status_code < 500, (resp.status_code, resp.text[:300])
    assert "Traceback" not in resp.text and 'File "' not in resp.text
    if resp.status_code in (401, 403) or resp.json() == {"message": "Not Found"}:
        return  # API Gateway's own answers (a "." segment is dropped by the client, so no route matches)
    if resp.status_code >= 400:
        assert set(resp.json()["error"]) >= {"code", "message"}


def test_fuzzed_bodies_over_http_never_5xx_and_record_nothing_on_4xx(api: Api, stack: Any) -> None:
    spec = api.ok("GET", "/v1/openapi.json")
    routes = [(method.upper(), path) for path, ops in spec["paths"].items() for method, op in ops.items()
              if "application/json" in op.get("requestBody", {}).get("content", {})]  # not the forms
    assert len(routes) >= 6
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    ddb = stack.client("dynamodb")
    table = stack.env["TABLE_NAME"]

    def count() -> int:
        return ddb.scan(TableName=table, Select="COUNT")["Count"]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(route=st.sampled_from(routes), body=BODIES, segment=SEGMENT, raw=st.booleans())
    def fuzz(route: tuple[str, str], body: Any, segment: str, raw: bool) -> None:
        method, template = route
        path = re.sub(r"\{session_id\}", sid, template)
        path = re.sub(r"\{[a-z_]+\}", lambda _: segment.replace("/", "%2F").replace("%", "%25"), path)
        before = count()
        data = json.dumps(body) if not raw else str(body)[:2000]
        resp = api.http.request(method, api.base + path, data=data.encode(), timeout=60)
        check(resp)
        if resp.status_code >= 400:
            assert count() == before, (method, path, data[:200])

    fuzz()
