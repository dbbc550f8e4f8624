"""The Lambda handlers (API, resume, authorizer) driven with API Gateway HTTP API v2 events.

Each handler module is loaded by file path, as Lambda would load it, and called with events
built from the samples in events/*.json, against moto's in-process AWS (the `aws` fixture).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

import pytest

from holdpoint import assembly
from holdpoint.aws.keys import put_api_key
from tests.harness import Harness
from tests.tables import moto_item_count

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


def load_handler(name: str) -> ModuleType:
    """Load functions/<name>/app.py under a unique module name (they all are `app`)."""
    spec = importlib.util.spec_from_file_location(f"holdpoint_fn_{name}_{uuid.uuid4().hex}",
                                                  ROOT / "functions" / name / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


API = load_handler("api")
RESUME = load_handler("resume")
AUTHORIZER = load_handler("authorizer")


class Context:
    function_name = "holdpoint-test"
    function_version = "$LATEST"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:holdpoint-test"
    aws_request_id = "00000000-0000-0000-0000-000000000000"
    log_group_name = "/aws/lambda/holdpoint-test"
    log_stream_name = "test"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


CONTEXT = Context()


def sample(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


def http_event(method: str, path: str, body: Any = None, *, raw_body: str | None = None,
               query: dict[str, str] | None = None, tenant: str | None = "dev", subject: str = "dev-user",
               origin: str = "client", route_key: str | None = None,
               path_params: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP API v2 event shaped like events/api_*.json, for `method path`."""
    event = copy.deepcopy(sample("api_create_session.json"))
    event["rawPath"] = path
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    key = route_key or f"{method} {path}"
    event["routeKey"] = event["requestContext"]["routeKey"] = key
    if raw_body is not None:
        event["body"] = raw_body
    elif body is not None:
        event["body"] = json.dumps(body)
    else:
        event.pop("body", None)
    event["headers"].pop("content-length", None)
    event["headers"].update(headers or {})
    if query:
        event["rawQueryString"] = urlencode(query)
        event["queryStringParameters"] = dict(query)
    if path_params is not None:
        event["pathParameters"] = path_params
    if tenant is None:
        event["requestContext"].pop("authorizer")
    else:
        event["requestContext"]["authorizer"]["lambda"] = {"tenant": tenant, "subject": subject, "origin": origin}
    return event


def parse(reply: dict[str, Any]) -> tuple[int, Any]:
    """Status and decoded JSON body of a handler reply (the body must be JSON)."""
    status = reply["statusCode"]
    body = reply.get("body")
    if reply.get("isBase64Encoded"):
        import base64

        body = base64.b64decode(body).decode()
    return status, json.loads(body) if body else None


def call_api(method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
    return parse(API.handler(http_event(method, path, body, **kw), CONTEXT))


def call_resume(session_id: str, interrupt_id: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
    event = http_event("POST", f"/v1/sessions/{session_id}/interrupts/{interrupt_id}/resume", body,
                       route_key="POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume",
                       path_params={"session_id": session_id, "interrupt_id": interrupt_id}, **kw)
    return parse(RESUME.handler(event, CONTEXT))


def table_items() -> int:
    """How many items the table holds (everything any request recorded), counted in moto's in-process AWS."""
    return moto_item_count("holdpoint")


def assert_error(status: int, body: Any, expected: int | None = None, *, code: str | None = None,
                 param: str | None = None) -> None:
    """A well-formed refusal: 4xx, `{"error": {code, message, param?}}`, no stack trace."""
    assert 400 <= status < 500, (status, body)
    if expected is not None:
        assert status == expected, (status, body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    err = body["error"]
    assert isinstance(err.get("code"), str) and err["code"], body
    assert isinstance(err.get("message"), str) and err["message"], body
    assert "Traceback" not in json.dumps(body), body
    if "param" in err:
        assert isinstance(err["param"], str) and err["param"], body
    if code is not None:
        assert err["code"] == code, body
    if param is not None:
        assert err.get("param") == param, body


@pytest.fixture
def api(aws: dict[str, str]) -> Iterator[dict[str, str]]:
    """moto AWS plus handler modules whose cached clients are built fresh for this test."""
    assembly.reset()
    yield aws
    assembly.reset()


def start_session(harness: Harness, text: str = "Email Bob that the report is ready.") -> str:
    """POST /v1/sessions through the API, then run the engine in-process until it rests."""
    status, body = call_api("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                     "message": {"role": "user", "content": text}})
    assert status == 202, body
    harness.session_id = body["session_id"]
    harness.settle()
    return body["session_id"]


# --- agents -------------------------------------------------------------------------------------


def test_put_then_get_agent(api: dict[str, str]) -> None:
    config = {"model": "m1", "llm": {"provider": "scripted", "script": []}, "system": "be brief",
              "tools": [{"name": "lookup", "input": {"type": "object"}}], "worker": {"url": "https://93.184.215.14/"}}
    status, body = call_api("PUT", "/v1/agents/helper", config)
    assert status == 200, body
    assert body["agent_id"] == "helper" and body["agent"]["system"] == "be brief"
    status, body = call_api("GET", "/v1/agents/helper")
    assert status == 200, body
    assert body["agent_id"] == "helper"
    stored = body["agent"]
    assert {k: stored[k] for k in config} == {**config, "worker": {"url": "https://93.184.215.14/",
                                                                   "timeout_secs": 30.0}}
    # Another tenant does not see it; an unknown agent is 404.
    assert_error(*call_api("GET", "/v1/agents/helper", tenant="other"), 404, code="not_found")
    assert_error(*call_api("GET", "/v1/agents/nobody"), 404, code="not_found")


def test_agent_worker_url_and_secret_are_checked(api: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "dev=HOOK_*")
    worker = {"url": "https://93.184.215.14/"}
    status, body = call_api("PUT", "/v1/agents/a1", {"worker": {**worker, "secret": "plain-text"}})
    assert_error(status, body, 400, param="worker.secret")
    status, body = call_api("PUT", "/v1/agents/a1", {"worker": {**worker, "secret": "env:HOOK_SECRET"}})
    assert status == 200, body


def test_missing_authorizer_context_is_401(api: dict[str, str]) -> None:
    assert_error(*call_api("GET", "/v1/agents/helper", tenant=None), 401, code="unauthorized")
    assert_error(*call_resume("s1", "i1", {}, tenant=None), 401, code="unauthorized")


# --- sessions -------------------------------------------------------------------------------------


def test_create_session_then_view(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    status, body = call_api("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                     "message": {"role": "user", "content": "say hi"}})
    assert status == 202, body
    assert set(body) == {"session_id", "turn_id", "queued"}
    assert body["session_id"] and body["turn_id"] and body["queued"] is False
    h.session_id = body["session_id"]
    h.settle()
    status, view = call_api("GET", f"/v1/sessions/{h.session_id}")
    assert status == 200, view
    assert view["session_id"] == h.session_id and view["agent_id"] == "assistant"
    assert isinstance(view["status"], str) and view["interrupts"] == []
    assert [m["role"] for m in view["messages"]] == ["user", "assistant"]
    assert view["messages"][-1]["content"] == "Hi!"
    tree = view["message_tree"]
    assert tree["head_id"] == view["messages"][-1]["id"] == view["head_id"]
    assert {n["message"]["id"] for n in tree["nodes"]} == {m["id"] for m in view["messages"]}
    # Another tenant's session is 404, as if absent.
    assert_error(*call_api("GET", f"/v1/sessions/{h.session_id}", tenant="other"), 404, code="not_found")


def test_create_session_needs_a_declared_agent(api: dict[str, str]) -> None:
    before = table_items()
    status, body = call_api("POST", "/v1/sessions", {"type": "client.message", "agent_id": "ghost",
                                                     "message": {"role": "user", "content": "hi"}})
    assert_error(status, body, 404, code="not_found", param="agent_id")
    assert table_items() == before


def test_idempotency_key_resend_of_a_new_session_finds_the_one_it_made(api: dict[str, str]) -> None:
    Harness(tenant="dev")  # declares the agent
    start = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": "hi"}}
    key = {"idempotency-key": "3f0c2a8e-5b1d-4c7e-9a2f-1d6b8e4c0a97"}
    status, first = call_api("POST", "/v1/sessions", start, headers=key)
    assert status == 202, first
    before = table_items()
    status, again = call_api("POST", "/v1/sessions", start, headers=key)
    assert (status, again) == (202, first)
    assert table_items() == before
    status, other = call_api("POST", "/v1/sessions", start, headers={"idempotency-key": "another"})
    assert status == 202 and other["session_id"] != first["session_id"]


def test_idempotency_key_malformed_is_a_400_naming_it_and_records_nothing(api: dict[str, str]) -> None:
    Harness(tenant="dev")
    before = table_items()
    status, body = call_api("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                     "message": {"role": "user", "content": "hi"}},
                            headers={"idempotency-key": "not a key!"})
    assert_error(status, body, 400, code="validation_error", param="idempotency-key")
    assert table_items() == before


def test_second_input_on_the_session(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    status, first = call_api("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                      "message": {"role": "user", "content": "say hi"}})
    assert status == 202
    h.session_id = first["session_id"]
    h.settle()
    status, body = call_api("POST", f"/v1/sessions/{h.session_id}/inputs",
                            {"type": "client.message", "message": {"role": "user", "content": "say hi again"}})
    assert status == 202, body
    assert body["session_id"] == h.session_id and body["turn_id"] != first["turn_id"]
    # Inputs on another tenant's (or an unknown) session are 404.
    status, body = call_api("POST", f"/v1/sessions/{h.session_id}/inputs",
                            {"type": "client.message", "message": {"role": "user", "content": "x"}}, tenant="other")
    assert_error(status, body, 404, code="not_found")


def test_session_view_shows_an_open_interrupt(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    status, view = call_api("GET", f"/v1/sessions/{sid}")
    assert status == 200, view
    assert view["status"] == "interrupted" or view["interrupts"], view
    [interrupt] = view["interrupts"]
    assert interrupt["reason"] == "confirm" and interrupt["payload"] == {"message": "Send the email?"}
    assert interrupt["interrupt_id"] in view["parked_by"]
    # The tenant's inbox lists it.
    status, inbox = call_api("GET", "/v1/interrupts", query={"status": "open"})
    assert status == 200, inbox
    assert [i["interrupt_id"] for i in inbox["interrupts"]] == [interrupt["interrupt_id"]]
    assert inbox["interrupts"][0]["session_id"] == sid
    status, other = call_api("GET", "/v1/interrupts", tenant="other")
    assert status == 200 and other["interrupts"] == []


def test_events_paging(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    status, everything = call_api("GET", f"/v1/sessions/{sid}/events", query={"limit": "500"})
    assert status == 200, everything
    seqs = [e["seq"] for e in everything["events"]]
    assert len(seqs) >= 4 and seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert everything["has_more"] is False and everything["next_after_seq"] == seqs[-1]
    paged: list[int] = []
    after = 0
    for _ in range(len(seqs) + 1):
        status, page = call_api("GET", f"/v1/sessions/{sid}/events", query={"after_seq": str(after), "limit": "3"})
        assert status == 200, page
        assert len(page["events"]) <= 3
        assert all(e["seq"] > after for e in page["events"])
        paged += [e["seq"] for e in page["events"]]
        after = page["next_after_seq"]
        if not page["has_more"]:
            break
    assert paged == seqs
    status, tail = call_api("GET", f"/v1/sessions/{sid}/events", query={"after_seq": str(seqs[-1])})
    assert status == 200 and tail["events"] == [] and tail["next_after_seq"] == seqs[-1]
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"limit": "0"}), 400, param="limit")
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"limit": "501"}), 400, param="limit")
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"after_seq": "-1"}), 400, param="after_seq")
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"after_seq": "x"}), 400, param="after_seq")
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", tenant="other"), 404)


# --- resume -----------------------------------------------------------------------------------------


def test_resume_route(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    iid = h.open_interrupt()["interrupt_id"]
    # Another tenant cannot see (or resume) it.
    assert_error(*call_resume(sid, iid, {"payload": {"approved": True}}, tenant="other"), 404, code="not_found")
    status, body = call_resume(sid, iid, {"payload": {"approved": True}})
    assert status == 200, body
    assert body == {"ok": True, "interrupt_id": iid, "noop": False}
    h.wake(iid, "resumed")
    # Resuming again, or an unknown id, is a no-op; a repeat says how it was cleared (A4).
    status, again = call_resume(sid, iid, {"payload": {"approved": True}})
    assert status == 200 and again["noop"] is True and again["resolved"]["same_payload"] is True
    assert call_resume(sid, "int-unknown", {}) == (200, {"ok": True, "interrupt_id": "int-unknown", "noop": True,
                                                         "known": False})
    # An unknown session is 404; the resume was recorded with its responder.
    assert_error(*call_resume("ses-nope", iid, {}), 404, code="not_found")
    resumed = h.triggers("interrupt.resumed")
    assert [t["interrupt_id"] for t in resumed] == [iid] and resumed[0]["payload"] == {"approved": True}
    status, view = call_api("GET", f"/v1/sessions/{sid}")
    assert view["interrupts"] == [] and view["messages"][-1]["content"] == "Email sent."


def test_resume_with_empty_body_is_refused_and_the_interrupt_stays_open(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    iid = h.open_interrupt()["interrupt_id"]
    for raw in (None, "", "  "):
        event = http_event("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", raw_body=raw,
                           path_params={"session_id": sid, "interrupt_id": iid})
        status, body = parse(RESUME.handler(event, CONTEXT))
        assert_error(status, body, 400, param="body")
        assert "JSON object body is required" in body["error"]["message"]
    assert h.open_interrupt()["interrupt_id"] == iid
    assert call_resume(sid, iid, {})[1]["noop"] is False  # `{}` is an answer with no payload


def test_interrupt_resume_as_an_input(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    iid = h.open_interrupt()["interrupt_id"]
    resume = {"type": "interrupt.resume", "interrupt_id": iid, "payload": {"approved": False}}
    assert_error(*call_api("POST", f"/v1/sessions/{sid}/inputs", resume, tenant="other"), 404)
    status, body = call_api("POST", f"/v1/sessions/{sid}/inputs", resume)
    assert (status, body) == (200, {"ok": True, "interrupt_id": iid, "noop": False})
    h.wake(iid, "resumed")
    assert call_api("POST", f"/v1/sessions/{sid}/inputs", resume)[1]["noop"] is True
    status, body = call_api("POST", f"/v1/sessions/{sid}/inputs",
                            {"type": "interrupt.resume", "interrupt_id": "int-unknown"})
    assert (status, body) == (200, {"ok": True, "interrupt_id": "int-unknown", "noop": True, "known": False})
    # interrupt.resume cannot create a session.
    assert_error(*call_api("POST", "/v1/sessions", resume), 400, param="type")
    assert h.triggers("interrupt.resumed")[0]["payload"] == {"approved": False}


def test_raise_interrupt_by_api(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h, "say hi")
    status, body = call_api("POST", f"/v1/sessions/{sid}/interrupts",
                            {"reason": "review", "payload": {"k": 1}, "interrupt_id": "op-1"})
    assert status == 200, body
    assert body["ok"] is True and body["interrupt_id"] == "op-1" and body["noop"] is False
    status, again = call_api("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "interrupt_id": "op-1"})
    assert status == 200 and again["noop"] is True
    status, view = call_api("GET", f"/v1/sessions/{sid}")
    assert [i["interrupt_id"] for i in view["interrupts"]] == ["op-1"]
    # A new message on the parked head is refused with 409 `interrupted`.
    status, body = call_api("POST", f"/v1/sessions/{sid}/inputs",
                            {"type": "client.message", "message": {"role": "user", "content": "more"}})
    assert_error(status, body, 409, code="interrupted")


def test_settle_unknown_call_is_404(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h, "say hi")
    status, body = call_api("POST", f"/v1/sessions/{sid}/calls/settle", {"type": "tool.result", "id": "c1",
                                                                          "result": "x"})
    assert_error(status, body, 404, param="id")


# --- authorizer ----------------------------------------------------------------------------------


def test_authorizer_accepts_a_stored_api_key(api: dict[str, str]) -> None:
    put_api_key("holdpoint", "hp_dev_local_key", "dev", "dev-user", "operator")
    out = AUTHORIZER.handler(sample("authorizer_request.json"), CONTEXT)
    context = out["context"]
    assert out["isAuthorized"] is True and len(context.pop("key_hash")) == 64  # each subscribe re-reads the key
    assert context == {"tenant": "dev", "subject": "dev-user", "origin": "operator"}
    # identitySource alone (no Authorization header) works too.
    event = sample("authorizer_request.json")
    event["headers"].pop("authorization")
    assert AUTHORIZER.handler(event, CONTEXT)["isAuthorized"] is True


@pytest.mark.parametrize("token", ["Bearer hp_wrong_key", "hp_dev_local_key", "Bearer ", "", "Basic abc",
                                   "Bearer a.b.c", "Bearer " + "x" * 5000])
def test_authorizer_refuses_bad_keys(api: dict[str, str], token: str) -> None:
    put_api_key("holdpoint", "hp_dev_local_key", "dev", "dev-user")
    event = sample("authorizer_request.json")
    event["headers"]["authorization"] = token
    event["identitySource"] = [token]
    assert AUTHORIZER.handler(event, CONTEXT) == {"isAuthorized": False}


def test_authorizer_without_any_token(api: dict[str, str]) -> None:
    event = sample("authorizer_request.json")
    event["headers"].pop("authorization")
    event.pop("identitySource")
    assert AUTHORIZER.handler(event, CONTEXT) == {"isAuthorized": False}


# --- the samples in events/ ---------------------------------------------------------------------------


def test_sample_events_are_accepted(api: dict[str, str]) -> None:
    Harness(tenant="dev")  # declares agent `assistant` for tenant `dev`
    put_api_key("holdpoint", "hp_dev_local_key", "dev", "dev-user")
    assert AUTHORIZER.handler(sample("authorizer_request.json"), CONTEXT)["isAuthorized"] is True
    status, created = parse(API.handler(sample("api_create_session.json"), CONTEXT))
    assert status == 202, created
    status, body = parse(API.handler(sample("api_get_session.json"), CONTEXT))
    assert status < 500 and (status == 200 or body["error"]["code"] == "not_found")
    status, body = parse(RESUME.handler(sample("api_resume.json"), CONTEXT))
    assert status < 500 and (status == 200 or body["error"]["code"] == "not_found")
    # With the sample's session present, the samples answer 200.
    event = sample("api_get_session.json")
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/v1/sessions/{created['session_id']}"
    event["pathParameters"] = {"session_id": created["session_id"]}
    status, body = parse(API.handler(event, CONTEXT))
    assert status == 200 and body["session_id"] == created["session_id"]
    event = sample("api_resume.json")
    event["pathParameters"]["session_id"] = created["session_id"]
    event["rawPath"] = event["requestContext"]["http"]["path"] = \
        f"/v1/sessions/{created['session_id']}/interrupts/int-1/resume"
    assert parse(RESUME.handler(event, CONTEXT)) == (200, {"ok": True, "interrupt_id": "int-1", "noop": True,
                                                           "known": False})


# --- OpenAPI -------------------------------------------------------------------------------------------


def test_openapi_document(api: dict[str, str]) -> None:
    status, doc = call_api("GET", "/v1/openapi.json")
    assert status == 200
    assert doc["openapi"].startswith("3.") and doc["info"]["title"] and doc["info"]["version"]
    try:
        from openapi_spec_validator import validate
    except ImportError:  # pragma: no cover - the key structure is the fallback check
        validate = None
    if validate is not None:
        validate(doc)
    paths = doc["paths"]
    expected = {
        ("/v1/sessions", "post"), ("/v1/sessions/{session_id}/inputs", "post"),
        ("/v1/sessions/{session_id}", "get"), ("/v1/sessions/{session_id}/events", "get"),
        ("/v1/sessions/{session_id}/interrupts", "post"), ("/v1/interrupts", "get"),
        ("/v1/sessions/{session_id}/calls/settle", "post"), ("/v1/agents/{agent_id}", "put"),
        ("/v1/agents/{agent_id}", "get"),
    }
    assert expected <= {(p, m) for p, ops in paths.items() for m in ops}
    for path, method in expected:
        op = paths[path][method]
        assert op["responses"], (path, method)
        if method in ("post", "put"):
            assert "requestBody" in op, (path, method)
    schemas = doc["components"]["schemas"]
    assert {"ClientMessageInput", "ClientMessagesInput", "InterruptResumeInput", "RaiseInterruptBody",
            "SettleBody", "AgentConfig"} <= set(schemas)
    assert "reason" in schemas["RaiseInterruptBody"]["required"]
    for path in ("/v1/sessions", "/v1/sessions/{session_id}/inputs"):
        headers = {p["name"]: p for p in paths[path]["post"]["parameters"] if p["in"] == "header"}
        assert headers["idempotency-key"]["schema"]["anyOf"][0]["maxLength"] == 255


def test_openapi_document_states_auth_statuses_and_ids(api: dict[str, str]) -> None:
    """What the document claims beyond the routes (tests/security/test_schemathesis.py checks the
    claims against the running API)."""
    _, doc = call_api("GET", "/v1/openapi.json")
    bearer = doc["components"]["securitySchemes"]["bearer"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    ops = {(path, method): op for path, item in doc["paths"].items() for method, op in item.items()}
    assert ("/v1/sessions/{session_id}/interrupts/{interrupt_id}/resume", "post") in ops
    for (path, method), op in ops.items():
        codes = set(op["responses"])
        if path in ("/v1/openapi.json", "/inbox", "/inbox/app.js", "/inbox/app.css", "/inbox/session",
                    "/inbox/session.js", "/inbox/live.json", "/favicon.ico"):
            assert "security" not in op and codes == {"200"}
            continue
        if path == "/.well-known/jwks.json":  # the receipt keys, public; KMS refusing for load is a 503
            assert "security" not in op and codes == {"200", "503"}
            continue
        if path == "/":  # the root leads to the inbox page
            assert "security" not in op and codes == {"302"}
            continue
        if path in ("/v1/links/{token}", "/v1/channels/slack/interactions"):  # the token or Slack's signature
            assert "security" not in op and "200" in codes and not codes & {"500", "501"}, (path, codes)
            continue
        if path in ("/a2a/{tenant}/{agent_id}/.well-known/agent-card.json",  # public if its agent says so
                    "/inbox/sign-in.json"):  # a tenant's sign-in settings, if it declared them
            assert "security" not in op and codes == {"200", "404"}, (path, codes)
            continue
        assert op["security"] == [{"bearer": []}], path
        assert {"401", "403"} <= codes and not codes & {"500", "501"}, (path, codes)
        if "requestBody" in op:  # a body over 1 MiB (Holdpoint) or 10 MiB (API Gateway), whatever the route
            assert "413" in codes, (path, method)
        accepts = method == "post" and path in ("/v1/sessions", "/v1/sessions/{session_id}/inputs")
        assert ("202" if accepts else "200") in codes
        for param in op.get("parameters", []):
            if param["in"] == "path":
                assert param["schema"]["pattern"] == r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$", (path, param)
        shapes = {code: json.dumps(resp["content"]["application/json"]["schema"]) for code, resp
                  in op["responses"].items() if int(code) >= 400}
        assert "GatewayError" in shapes["401"] and "GatewayError" in shapes["403"]
        for code in ("404", "413"):
            if code in shapes:
                assert "GatewayError" in shapes[code] and '/Error"' in shapes[code], (path, code)
        if path == "/mcp/{agent_id}":  # MCP 2026-07-28 sends its JSON-RPC errors with a 400
            assert '"jsonrpc"' in shapes.pop("400")
        assert all(code in ("401", "403", "404", "413") or shapes[code].endswith('/Error"}')
                   for code in shapes), (path, shapes)
    assert "422" in ops[("/v1/sessions", "post")]["responses"]
    assert "422" not in ops[("/v1/agents/{agent_id}", "put")]["responses"]
    start = ops[("/v1/sessions", "post")]["requestBody"]["content"]["application/json"]["schema"]
    assert len(start["oneOf"]) == 3
    schemas = doc["components"]["schemas"]
    for ref in start["oneOf"]:
        assert "agent_id" in schemas[ref["$ref"].rsplit("/", 1)[1]]["required"]
    assert "HTTPValidationError" not in schemas


def test_tool_result_input_settles_like_calls_settle(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h, "say hi")
    for body in ({"type": "tool.result", "id": "c-unknown", "result": "x"},
                 {"type": "tool.error", "id": "c-unknown", "error": "x"}):
        assert_error(*call_api("POST", f"/v1/sessions/{sid}/inputs", body), 404, param="id")
        assert_error(*call_api("POST", f"/v1/sessions/{sid}/calls/settle", body), 404, param="id")
        assert_error(*call_api("POST", "/v1/sessions", body), 400, param="type")


def test_errors_a_person_meets_first_name_what_to_do() -> None:
    """Issue 32: an answer sent without its `payload` wrapper, and a plain-text `message`, get a
    400 that says what to send instead, not only pydantic's words."""
    from pydantic import ValidationError

    from holdpoint.core.ids import first_error
    from holdpoint.core.protocols.client import ClientMessageInput
    from holdpoint.http.bodies import ResumeBody

    for model, body, param, hint in (
            (ResumeBody, {"approved": True}, "approved", "goes inside `payload`"),
            (ClientMessageInput, {"type": "client.message", "message": "hi"}, "message", '"role": "user"')):
        try:
            model.model_validate(body)
        except ValidationError as exc:
            got = first_error(exc)
            assert got[0] == param and hint in got[1], got
        else:
            raise AssertionError(body)


def test_session_view_waits_until_a_status(api: dict[str, str]) -> None:
    """Issue 32: `GET /v1/sessions/{id}?until=interrupted&wait=N` answers once the session's status
    is one of those named, so a script need not poll; a status that is not one is 400 naming
    `until`. Another thread resumes while the request waits for `done`."""
    h = Harness(tenant="dev")
    sid = start_session(h)
    status, view = call_api("GET", f"/v1/sessions/{sid}", query={"until": "interrupted,done", "wait": "20"})
    assert status == 200 and view["status"] == "interrupted", view
    iid = view["interrupts"][0]["interrupt_id"]
    assert_error(*call_api("GET", f"/v1/sessions/{sid}", query={"until": "parked"}), 400, param="until")
    got: list[tuple[int, Any]] = []
    waiter = threading.Thread(target=lambda: got.append(
        call_api("GET", f"/v1/sessions/{sid}", query={"until": "done", "wait": "20"})))
    waiter.start()
    call_resume(sid, iid, {"payload": {"approved": True}})
    h.wake(iid, "resumed")  # what the resume's SendTaskSuccess becomes (ParkBranch's wake message)
    h.settle()
    waiter.join(30)
    [(status, view)] = got
    assert status == 200 and view["status"] == "done", view
