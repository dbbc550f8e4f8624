"""End user vs tenant, over HTTP on the local stack: a client token (JWT) reaches only its own
subject's sessions, and only the bound session when the token names one. Tenant-level routes
(declaring and reading agents) are for API keys."""

from __future__ import annotations

from typing import Any

from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api


def test_client_token_can_neither_overwrite_nor_read_the_tenants_agents(api: Api, stack: Any,
                                                                       worker: tuple[str, Any]) -> None:
    mallory = client_token_api(stack, "end-user-mallory")
    before = table_count(stack)
    hijack = {"worker": {"url": "http://127.0.0.1:9/"}, "llm": {"provider": "scripted", "script": []}}
    refusal(mallory.req("PUT", "/v1/agents/assistant", hijack), 403, code="forbidden")
    refusal(mallory.req("PUT", "/v1/agents/mallory-agent", hijack), 403, code="forbidden")
    refusal(mallory.req("GET", "/v1/agents/assistant"), 403, code="forbidden")
    assert table_count(stack) == before
    assert api.ok("GET", "/v1/agents/assistant")["agent"]["worker"]["url"] == worker[0]
    assert api.req("GET", "/v1/agents/mallory-agent").status_code == 404


def test_session_bound_token_cannot_start_sessions_or_reach_others(api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    other = api.start("say hi")
    api.wait_status(other, "done")
    bound = client_token_api(stack, "dev-user", session_id=sid)
    assert bound.ok("GET", f"/v1/sessions/{sid}")["session_id"] == sid
    before = table_count(stack)
    start = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": "hi"}}
    refusal(bound.req("POST", "/v1/sessions", start), 403, code="forbidden")
    refusal(bound.req("GET", f"/v1/sessions/{other}"), 404, code="not_found")
    refusal(bound.req("POST", f"/v1/sessions/{other}/inputs",
                      {"type": "client.message", "message": {"role": "user", "content": "x"}}), 404)
    refusal(bound.req("PUT", "/v1/agents/assistant", {}), 403, code="forbidden")
    assert table_count(stack) == before
    # An unbound client token starts sessions of its own, which the tenant's other users cannot see.
    alice = client_token_api(stack, "alice")
    mine = alice.ok("POST", "/v1/sessions", start)["session_id"]
    refusal(client_token_api(stack, "bob").req("GET", f"/v1/sessions/{mine}"), 404)
