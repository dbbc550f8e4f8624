"""Over HTTP on the local stack: `GET /v1/sessions` (newest first, filters, sealed cursors, another
tenant sees nothing) and `POST /v1/workers/submit` (an HTTPS worker answers 202 and submits the
answer later; a repeat is a no-op; a decision no longer current is 409 naming it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, declare_agent, seed_worker


def deferring_answer(sent: dict[str, Any]) -> Any:
    """The seed worker, except that it takes `tool.execute` and answers it later."""
    if sent["trigger"]["type"] == "tool.execute":
        return seed_worker.LATER
    return seed_worker.seed(sent)


@pytest.fixture
def deferring(stack: Any) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    server, seen = seed_worker.serve(0, None, answer=deferring_answer)
    yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    server.shutdown()


@pytest.fixture
def backend(stack: Any) -> Api:
    put_api_key(stack.env["TABLE_NAME"], "hp_backend_machine_key", stack.tenant, "backend", "machine")
    return Api(stack.base_url, "hp_backend_machine_key")


def listed(api: Api, query: str = "") -> dict[str, Any]:
    out: dict[str, Any] = api.ok("GET", f"/v1/sessions{query}")
    return out


def test_listing_newest_first_with_filters_and_paging(api: Api, stack: Any, other_tenant: Api) -> None:
    done = api.start("say hi")
    api.wait_status(done, "done")
    parked = api.start("Email Bob")
    api.wait_status(parked, "interrupted")
    rows = listed(api)["sessions"]
    assert [(r["session_id"], r["status"]) for r in rows] == [(parked, "interrupted"), (done, "done")]
    assert rows[0]["agent_id"] == "assistant" and rows[0]["top_level"] is True
    assert [r["session_id"] for r in listed(api, "?status=interrupted")["sessions"]] == [parked]
    page = listed(api, "?limit=1")
    assert [r["session_id"] for r in page["sessions"]] == [parked]
    rest = listed(api, f"?limit=1&cursor={page['next_cursor']}")
    assert [r["session_id"] for r in rest["sessions"]] == [done] and rest["next_cursor"] is None
    assert listed(other_tenant) == {"sessions": [], "next_cursor": None}
    alice = client_token_api(stack, "alice")  # an end user lists only her own sessions
    hers = alice.start("say hi")
    assert [r["session_id"] for r in listed(alice)["sessions"]] == [hers]
    assert [r["session_id"] for r in listed(api)["sessions"]] == [hers, parked, done]
    refusal(other_tenant.req("GET", f"/v1/sessions?cursor={page['next_cursor']}"), 400, param="cursor")
    for query, param in (("limit=0", "limit"), ("status=asleep", "status"), ("top_level=perhaps", "top_level"),
                         ("agent_id=a%20b", "agent_id"), ("cursor=x", "cursor")):
        refusal(api.req("GET", f"/v1/sessions?{query}"), 400, param=param)


def test_a_worker_answers_202_and_submits_later(api: Api, stack: Any, backend: Api, other_tenant: Api,
                                                deferring: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = deferring
    declare_agent(api, url, worker={"url": url})
    sid = api.start("Email Bob")
    view = api.wait(sid, lambda v: any(r["trigger"]["type"] == "tool.execute" for r in seen))
    assert view["status"] == "running"
    [taken] = [r for r in seen if r["trigger"]["type"] == "tool.execute"]
    events = api.events(sid)
    assert [e["data"]["decision_id"] for e in events if e["type"] == "decision.deferred"] == [taken["decision_id"]]
    answer = {"session_id": sid, "decision_id": taken["decision_id"],
              "actions": [{"type": "interrupt", "reason": "confirm", "payload": {"message": "Send the email?"}}]}

    before = table_count(stack)
    refusal(other_tenant.req("POST", "/v1/workers/submit", answer), 404, code="not_found")
    refusal(api.req("POST", "/v1/workers/submit", answer), 403, code="forbidden")  # a client key
    refusal(backend.req("POST", "/v1/workers/submit", {**answer, "actions": [{"type": "interrupt"}]}), 400,
            param="actions[0].reason")
    refusal(backend.req("POST", "/v1/workers/submit", {**answer, "decision_id": "dec_unknown"}), 404,
            param="decision_id")
    assert table_count(stack) == before

    out = backend.ok("POST", "/v1/workers/submit", answer)
    assert out == {"ok": True, "session_id": sid, "decision_id": taken["decision_id"], "noop": False}
    assert backend.ok("POST", "/v1/workers/submit", answer)["noop"] is True
    view = api.wait_status(sid, "interrupted")
    [interrupt] = view["interrupts"]
    assert api.resume(sid, interrupt["interrupt_id"], {"approved": True}).status_code == 200
    view = api.wait_status(sid, "done")
    assert view["messages"][-1]["content"] == "Email sent."

    start = [r for r in seen if r["session_id"] == sid and r["trigger"]["type"] == "session.start"][0]
    refusal(backend.req("POST", "/v1/workers/submit", {**answer, "decision_id": start["decision_id"]}), 409,
            code="decision_not_current", param="decision_id")
