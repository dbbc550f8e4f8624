"""Bad bytes over HTTP on the local stack: every one gets a 4xx naming where the problem is, never a
5xx, and nothing is recorded. Huge integers, NaN/Infinity/1e999, lone surrogates, duplicate keys,
forged or foreign inbox cursors, and an empty resume body."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.security.probes import refusal, table_count
from tests.stack import Api, execution_status, resumed_triggers

HUGE = "9" * 5000


def raw(api: Api, method: str, path: str, body: str) -> Any:
    return api.http.request(method, api.base + path, data=body.encode("utf-8"), timeout=60)


@pytest.fixture
def parked(api: Api) -> tuple[str, str]:
    """A session parked on the seed worker's `confirm` interrupt."""
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    return sid, iid


def routes(sid: str, iid: str) -> list[tuple[str, str, str, str]]:
    """(method, path, body template with {X} where the bad value goes, expected param)."""
    return [
        ("POST", "/v1/sessions", '{"type": "client.message", "agent_id": "assistant", '
         '"message": {"role": "user", "content": "hi"}, "turn_id": {X}}', "turn_id"),
        ("POST", f"/v1/sessions/{sid}/inputs",
         '{"type": "interrupt.resume", "interrupt_id": "' + iid + '", "payload": {"n": {X}}}', "payload.n"),
        ("POST", f"/v1/sessions/{sid}/interrupts", '{"reason": "r", "payload": [1, {X}]}', "payload[1]"),
        ("POST", f"/v1/sessions/{sid}/calls/settle", '{"type": "tool.result", "id": "c1", "result": {X}}', "result"),
        ("PUT", "/v1/agents/probe", '{"budget": {"max_cost": {X}}}', "budget.max_cost"),
        ("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", '{"payload": {"approved": {X}}}',
         "payload.approved"),
    ]


@pytest.mark.parametrize("bad", [HUGE, "-" + HUGE, "NaN", "Infinity", "-Infinity", "1e999", '"\\ud800"',
                                 '"a\\udfff"', '{"k": 1, "k": 2}'])
def test_bad_numbers_surrogates_and_duplicate_keys_are_400_naming_the_field(api: Api, stack: Any,
                                                                             parked: tuple[str, str],
                                                                             bad: str) -> None:
    sid, iid = parked
    before = table_count(stack)
    for method, path, template, param in routes(sid, iid):
        resp = raw(api, method, path, template.replace("{X}", bad))
        refusal(resp, 400, code="validation_error", param=param)
    assert table_count(stack) == before
    assert api.req("GET", "/v1/agents/probe").status_code == 404
    assert api.view(sid)["interrupts"][0]["interrupt_id"] == iid


def test_empty_resume_body_is_refused_and_the_branch_stays_parked(api: Api, stack: Any, parked: tuple[str, str],
                                                                  worker: tuple[str, list[dict[str, Any]]]) -> None:
    sid, iid = parked
    before = table_count(stack)
    for body in ("", " ", "\n"):
        err = refusal(raw(api, "POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", body), 400, param="body")
        assert "JSON object body is required" in err["message"]
    assert table_count(stack) == before
    view = api.view(sid)
    assert view["status"] == "interrupted" and view["interrupts"][0]["interrupt_id"] == iid
    assert execution_status(stack, sid, iid) == "RUNNING"
    assert resumed_triggers(worker[1], sid) == []


def _b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


@pytest.mark.parametrize("cursor", [
    _b64({"GSI1PK": "x"}),
    _b64({"GSI1PK": ["T#dev#OPEN"]}),
    _b64({"GSI1PK": {"S": "T#dev#OPEN"}, "GSI1SK": {"S": "z"}, "PK": {"S": "T#dev#S#x"}, "SK": {"S": "I#x"}}),
    base64.b64encode(b"[" * 1500).decode(),
    "NaN",
    "not-base64!",
    "a.b",
    "x" * 2048,
])
def test_forged_inbox_cursors_are_400(api: Api, parked: tuple[str, str], cursor: str) -> None:
    refusal(api.http.get(f"{api.base}/v1/interrupts", params={"cursor": cursor}, timeout=30), 400,
            code="validation_error", param="cursor")


def test_cursor_is_tamper_evident_and_bound_to_its_tenant(api: Api, stack: Any, other_tenant: Api) -> None:
    for text in ("one", "two"):
        sid = api.start(f"Email Bob {text}")
        api.wait_status(sid, "interrupted")
    first = api.ok("GET", "/v1/interrupts?limit=1")
    cursor = first["next_cursor"]
    assert cursor and len(cursor.split(".")[1]) == 43  # a payload and its HMAC-SHA256
    second = api.ok("GET", f"/v1/interrupts?limit=1&cursor={cursor}")
    assert second["interrupts"] and second["interrupts"][0]["interrupt_id"] != first["interrupts"][0]["interrupt_id"]
    flipped = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    refusal(api.http.get(f"{api.base}/v1/interrupts", params={"cursor": flipped}, timeout=30), 400, param="cursor")
    refusal(other_tenant.http.get(f"{api.base}/v1/interrupts", params={"cursor": cursor}, timeout=30), 400,
            param="cursor")


def test_bad_bytes_a_url_no_http_client_can_send_is_refused_where_declared_and_fails_cleanly_if_sent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-ASCII URL used to pass the declaration check and then make http.client raise
    UnicodeEncodeError inside the engine's record, which failed that record and, with it, the rest
    of its SQS batch. It is refused where it is declared, and a send that fails to encode anyway
    is the worker's failure (`WorkerUnavailable`), never the engine's."""
    from holdpoint.outbound import netguard
    from holdpoint.outbound.workers import post_signed
    from holdpoint.ports import WorkerUnavailable

    monkeypatch.setenv(netguard.LOCAL_FLAG, "1")
    assert netguard.check_url("https://93.184.215.14/caf\u00e9", "worker.url") == (
        "worker.url must be ASCII: percent-encode the path, and give the host in its xn-- form")
    assert netguard.check_url("https://93.184.215.14/caf%C3%A9", "worker.url") is None
    with pytest.raises(WorkerUnavailable, match="could not be sent"):
        post_signed("http://127.0.0.1:9/x", {}, None, "dev", "a2a.push", 2, headers={"X-Token": "a\r\nB: c"})
