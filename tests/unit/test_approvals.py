"""Approvals you can trust (PROTOCOL.md §3, A1, A3 and A4), against the real core and store on moto.

HTTP versions over the local stack live in tests/e2e/test_approvals_e2e.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.aws.store import agent_digest
from holdpoint.core import schemas
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.answers import given
from holdpoint.core.errors import Refusal
from holdpoint.http import rendering
from holdpoint.services import sessions
from holdpoint.services.links import Followed
from holdpoint.services.resume import Answered, Cleared, Progress, Resumed
from tests.harness import TOOLS, Harness, spent_tokens
from tests.unit.test_api import (
    API,
    CONTEXT,
    RESUME,
    call_api,
    call_resume,
    http_event,
    parse,
    start_session,
    table_items,
)

pytestmark = pytest.mark.usefixtures("memory")

APPROVAL = {"type": "object", "required": ["approved"], "additionalProperties": False,
            "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}}}


@pytest.fixture
def handlers(aws: dict[str, str]) -> Iterator[None]:
    """The API's handler modules with clients built fresh for this test's moto AWS."""
    assembly.reset()
    yield
    assembly.reset()


def asking(schema_field: dict[str, Any]) -> Any:
    """A worker that asks before every tool with `schema_field` on its interrupt action."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        t = req["trigger"]
        if t["type"] == "tool.execute":
            return {"actions": [{"type": "interrupt", "interrupt_id": "int-ok", "reason": "approve",
                                 **schema_field}]}
        if t["type"] == "interrupt.resumed":
            return {"actions": [{"type": "tool.result", "result": f"answer {t['payload']}"}]}
        return req["proposed"]

    return decide


def refused(h: Harness, payload: Any) -> Refusal:
    with pytest.raises(Refusal) as info:
        h.resume("int-ok", payload)
    return info.value


# --- A1 -------------------------------------------------------------------------------------


def test_a1_schema_module_checks_schemas_and_names_the_failing_path() -> None:
    assert schemas.schema_error(APPROVAL) is None and schemas.schema_error(True) is None
    assert "not a valid JSON Schema" in (schemas.schema_error({"type": "nope"}) or "")
    assert schemas.schema_error("object") is not None
    assert "references inside itself" in (schemas.schema_error({"$ref": "https://example.com/s.json"}) or "")
    assert "resolves to nothing" in (schemas.schema_error({"properties": {"a": {"$ref": "#/$defs/no"}}}) or "")
    assert "without end" in (schemas.schema_error({"allOf": [{"$ref": "#"}]}) or "")
    assert "$schema must be a string" in (schemas.schema_error({"$schema": ["x"]}) or "")
    loop = {"properties": {"a": {"allOf": [{"$ref": "#/properties/a"}]}}}  # loops only on `a`
    assert schemas.schema_error(loop) is None
    assert schemas.answer_error(loop, {"a": 1}) == ("payload", "the interrupt's response_schema cannot be "
                                                              "evaluated: RecursionError")
    local = {"$defs": {"b": {"type": "boolean"}}, "properties": {"a": {"$ref": "#/$defs/b"}}}
    assert schemas.schema_error(local) is None
    assert schemas.answer_error(APPROVAL, {"approved": "yes"})[0] == "payload.approved"  # type: ignore[index]
    assert schemas.answer_error(APPROVAL, {"approved": True}) is None
    items = {"type": "array", "items": {"type": "string"}}
    assert schemas.answer_error({"type": "object", "properties": {"items": items}},
                                {"items": ["a", 1]})[0] == "payload.items[1]"  # type: ignore[index]
    # AG-UI's shape is read first (answers.given): the inner payload is checked, named where it was sent.
    agui = given({"status": "resolved", "payload": {"approved": 1}, "responder": {"name": "ann"}})
    assert schemas.answer_error(APPROVAL, agui.payload, agui.param)[0] == "payload.payload.approved"  # type: ignore[index]
    assert schemas.declared(None, {"responseSchema": APPROVAL}) == APPROVAL
    assert schemas.declared(True, {"responseSchema": APPROVAL}) is True


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a1_bad_answer_is_refused_and_nothing_changes_then_a_good_one_resumes() -> None:
    h = Harness(asking({"response_schema": APPROVAL}))
    h.say("Email Bob")
    [interrupt] = h.view()["interrupts"]
    assert interrupt["response_schema"] == APPROVAL
    tokens = spent_tokens(h)
    events, items = len(h.events()), table_items()
    for payload, param in (({"approved": "yes"}, "payload.approved"), ({}, "payload"),
                           ({"approved": True, "extra": 1}, "payload"), (None, "payload")):
        err = refused(h, payload)
        assert (err.code, err.param) == ("invalid_resume", param), err.body()
    assert h.view()["status"] == "interrupted" and len(h.events()) == events and table_items() == items
    assert tokens == []
    assert h.resume("int-ok", {"approved": True}).noop is False
    assert tokens == [f"token-int-ok-{h.state().interrupts['int-ok'].generation}"]
    [resumed] = h.events("session.interrupt_resumed")
    assert h.view()["interrupts"] == [] and resumed["data"]["payload"] == {"approved": True}


def test_a1_invalid_schema_on_a_worker_action_fails_validation_naming_the_field() -> None:
    h = Harness(asking({"response_schema": {"type": "nope"}}))
    h.say("Email Bob")
    [failed] = h.events("decision.failed")
    assert failed["data"]["error"]["param"] == "actions[0].response_schema"
    assert h.view()["interrupts"] == []


def test_a1_agui_payload_response_schema_is_read_and_checked_on_the_inner_payload() -> None:
    h = Harness(asking({"payload": {"responseSchema": APPROVAL}}))
    h.say("Email Bob")
    err = refused(h, {"status": "resolved", "payload": {"approved": "no"}})
    assert (err.code, err.param) == ("invalid_resume", "payload.payload.approved")
    # A cancelled AG-UI answer is not checked against the schema.
    assert h.resume("int-ok", {"status": "cancelled", "payload": None}).noop is False


def test_a1_invalid_agui_schema_on_a_worker_action_fails_validation() -> None:
    h = Harness(asking({"payload": {"responseSchema": {"required": "approved"}}}))
    h.say("Email Bob")
    [failed] = h.events("decision.failed")
    assert failed["data"]["error"]["param"] == "actions[0].payload"
    assert "responseSchema" in failed["data"]["error"]["message"]


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
@pytest.mark.usefixtures("handlers")
def test_a1_api_raise_takes_a_response_schema_and_refuses_an_invalid_one() -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    before = table_items()
    for body, param in (({"reason": "r", "response_schema": {"type": "nope"}}, "response_schema"),
                        ({"reason": "r", "response_schema": "yes"}, "response_schema"),
                        ({"reason": "r", "payload": {"responseSchema": {"minimum": "x"}}}, "payload")):
        status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts", body, origin="operator")
        assert status == 400 and out["error"]["param"] == param, out
    assert table_items() == before
    status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts",
                           {"reason": "check", "interrupt_id": "int-api", "response_schema": APPROVAL})
    assert status == 200 and out["interrupt"]["response_schema"] == APPROVAL
    status, out = call_resume(sid, "int-api", {"payload": {"approved": "maybe"}})
    assert status == 400 and out["error"]["code"] == "invalid_resume" and out["error"]["param"] == "payload.approved"
    status, out = call_api("POST", f"/v1/sessions/{sid}/inputs",
                           {"type": "interrupt.resume", "interrupt_id": "int-api", "payload": {"approved": 3}})
    assert status == 400 and out["error"]["code"] == "invalid_resume" and out["error"]["param"] == "payload.approved"
    assert any(i["interrupt_id"] == "int-api" for i in h.view()["interrupts"])
    status, out = call_resume(sid, "int-api", {"payload": {"approved": True}})
    assert (status, out) == (200, {"ok": True, "interrupt_id": "int-api", "noop": False})


def test_a1_service_raise_stores_the_schema() -> None:
    h = Harness(origin="operator")
    h.say("say hi")
    assert h.session_id
    out = sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="review", payload=None,
                                   global_=False, interrupt_id="int-ok", expires_in=None, request_id="req-1",
                                   response_schema=APPROVAL)
    assert out.interrupt["response_schema"] == APPROVAL
    assert h.store.read_interrupt(h.caller.tenant, h.session_id, "int-ok").response_schema == APPROVAL  # type: ignore[union-attr]


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a1_resume_reads_once_writes_once_and_reads_the_token_after_its_write() -> None:
    """One read of the interrupt, one conditional write, and one read of the task token, after the
    write (a park message that lands between them is seen: R7)."""
    h = Harness(asking({"response_schema": APPROVAL}))
    h.say("Email Bob")
    calls: list[str] = []
    h.store.client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    tokens = spent_tokens(h)
    from holdpoint.services.resume import resume

    assert h.session_id
    resume(h.store, h.parking, h.caller, h.session_id, "int-ok", {"approved": True})
    assert calls == ["GetItem", "UpdateItem", "GetItem"] and len(tokens) == 1


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a1_a_reraised_interrupt_cannot_slip_in_between_the_read_and_the_write() -> None:
    """The write is conditioned on the generation the read saw: a resume checked against one
    schema never clears an interrupt raised again (perhaps with another schema) in between."""
    h = Harness(asking({"response_schema": APPROVAL}))
    h.say("Email Bob")
    assert h.session_id
    stale = h.store.read_interrupt(h.caller.tenant, h.session_id, "int-ok")
    assert stale is not None
    stale.response_schema = True  # what an earlier generation allowed
    # The interrupt is raised again under generation 1 before the write lands.
    from holdpoint.aws.store import session_pk

    h.store.client.update_item(TableName=h.store.table, Key={"PK": {"S": session_pk(h.caller.tenant, h.session_id)},
                                                             "SK": {"S": "I#int-ok"}},
                               UpdateExpression="SET generation = :g", ExpressionAttributeValues={":g": {"N": "1"}})
    h.store.read_interrupt = lambda *a: stale  # type: ignore[method-assign]
    err = refused(h, {"anything": "goes"})
    assert err.code == "conflict" and err.param == "interrupt_id"
    assert h.view()["status"] == "interrupted"


# --- A4 -------------------------------------------------------------------------------------


def test_a4_a_repeated_resume_says_who_cleared_it_when_and_with_what() -> None:
    h = Harness(asking({}))
    h.say("Email Bob")
    first = h.resume("int-ok", {"approved": True, "note": "ok"})
    assert first == Resumed("int-ok", noop=False)
    again = h.resume("int-ok", {"note": "ok", "approved": True})
    assert again.noop is True and again.interrupt_id == "int-ok"
    resolved = again.cleared
    assert resolved is not None and (resolved.subject, resolved.origin) == ("user-1", "client")
    assert resolved.status == "resolved" and (resolved.at or "").endswith("Z") and resolved.same_payload is True
    assert h.resume("int-ok", {"approved": False}).cleared == replace(resolved, same_payload=False)
    # An unknown id is a no-op that says the session never had it.
    assert h.resume("int-unknown", {}) == Resumed("int-unknown", noop=True, known=False)


def test_a4_each_resume_outcome_renders_as_its_wire_body_field_for_field_and_in_order() -> None:
    """The edge says a resume's outcome in the JSON the API has always sent (the key order too)."""
    def wire(body: dict[str, Any]) -> str:
        return json.dumps(body)

    assert wire(rendering.resumed(Resumed("i", noop=False))) == '{"ok": true, "interrupt_id": "i", "noop": false}'
    recorded = Resumed("i", noop=False, progress=Progress(approvals=1, quorum=2))
    assert wire(rendering.resumed(recorded)) == (
        '{"ok": true, "interrupt_id": "i", "noop": false, "status": "open", "approvals": 1, "quorum": 2}')
    repeat = Resumed("i", noop=True, progress=Progress(1, 2), answered=Answered("2026-01-01T00:00:00.000Z", "approved",
                                                                                 same_payload=False))
    assert wire(rendering.resumed(repeat)) == (
        '{"ok": true, "interrupt_id": "i", "noop": true, "status": "open", "approvals": 1, "quorum": 2, '
        '"answered": {"at": "2026-01-01T00:00:00.000Z", "status": "approved", "same_payload": false}}')
    cleared = Resumed("i", noop=True, cleared=Cleared("ann", "client", "2026-01-01T00:00:00.000Z", "resolved", True))
    assert wire(rendering.resumed(cleared)) == (
        '{"ok": true, "interrupt_id": "i", "noop": true, "resolved": {"by": {"subject": "ann", "origin": "client"}, '
        '"at": "2026-01-01T00:00:00.000Z", "status": "resolved", "same_payload": true}}')
    assert wire(rendering.followed(Followed(Resumed("i", noop=True), "deny"))) == (
        '{"ok": true, "interrupt_id": "i", "noop": true, "option": "deny"}')


def test_a4_a_resume_after_expiry_says_it_expired() -> None:
    h = Harness(asking({"expires_in": 60}))
    h.say("Email Bob")
    h.wake("int-ok", "expired")
    again = h.resume("int-ok", {"approved": True})
    assert again.noop is True and again.cleared is not None
    assert again.cleared.status == "expired" and again.cleared.same_payload is False
    assert (again.cleared.subject, again.cleared.origin) == ("expiry", "system")


def test_a4_a_repeat_is_not_checked_against_the_schema() -> None:
    """A repeated answer changes nothing, so it is told the truth rather than refused."""
    h = Harness(asking({"response_schema": APPROVAL}))
    h.say("Email Bob")
    h.resume("int-ok", {"approved": True})
    again = h.resume("int-ok", {"approved": "yes"})
    assert again.noop is True and again.cleared is not None and again.cleared.same_payload is False


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a1_an_interrupt_stored_before_generation_was_an_attribute_still_resumes() -> None:
    h = Harness(asking({"response_schema": APPROVAL}))
    h.say("Email Bob")
    assert h.session_id
    from holdpoint.aws.store import session_pk

    h.store.client.update_item(TableName=h.store.table, Key={"PK": {"S": session_pk(h.caller.tenant, h.session_id)},
                                                             "SK": {"S": "I#int-ok"}},
                               UpdateExpression="REMOVE generation")
    assert refused(h, {"approved": 1}).code == "invalid_resume"
    assert h.resume("int-ok", {"approved": True}).noop is False


# --- A3 -------------------------------------------------------------------------------------


def test_a3_core_binds_the_tool_its_canonical_arguments_and_the_agent_version() -> None:
    from holdpoint.core import interrupts as rules
    from holdpoint.core.state import Call, Header, SessionState

    agent = {"worker": {"python": "w"}, "tools": TOOLS}
    state = SessionState(header=Header(tenant="t1", session_id="ses-1", agent_id="assistant", agent_item=agent))
    state.calls["c1"] = Call(id="c1", kind="tool_call", anchor=None, turn_id=None, order=0, name="send_email",
                             arguments='{ "to": "bob", "cc": ["ann"] }')
    action = rules.bound_action(state, "c1")
    assert action is not None
    assert action.tool == "send_email" and action.arguments == '{"cc":["ann"],"to":"bob"}'
    assert action.agent_version == agent_digest(agent)
    assert action.fingerprint == hashlib.sha256(
        json.dumps(["send_email", '{"cc":["ann"],"to":"bob"}', agent_digest(agent)],
                   separators=(",", ":")).encode()).hexdigest()
    # The same call in another key order binds the same action; other arguments or config do not.
    state.calls["c1"].arguments = '{"cc":["ann"],"to":"bob"}'
    assert rules.bound_action(state, "c1") == action
    state.calls["c1"].arguments = '{"to":"eve","cc":["ann"]}'
    assert rules.bound_action(state, "c1") != action
    state.calls["c1"].arguments = '{"cc":["ann"],"to":"bob"}'
    state.header.agent = AgentConfig.from_item({**agent, "tools": []})
    assert rules.bound_action(state, "c1") != action
    assert rules.bound_action(state, None) is None and rules.bound_action(state, "nope") is None


def test_a3_the_view_shows_the_action_an_approval_is_for() -> None:
    h = Harness(asking({}))
    h.say("Email Bob")
    [interrupt] = h.view()["interrupts"]
    action = interrupt["action"]
    assert action["tool"] == "send_email" and action["arguments"] == '{"to":"bob"}'
    assert action["agent_version"] == agent_digest(h.state().header.agent_item)
    assert len(action["fingerprint"]) == 64
    assert interrupt["call_id"] in h.state().calls


def test_a3_a_global_interrupt_raised_by_an_operator_binds_no_action() -> None:
    h = Harness(origin="operator")
    h.say("say hi")
    assert h.session_id
    out = sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="review", payload=None,
                                   global_=False, interrupt_id="int-op", expires_in=None, request_id="req-1")
    assert "action" not in out.interrupt


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
def test_a3_a_stale_fingerprint_is_refused_and_nothing_changes_then_the_right_one_resumes() -> None:
    from holdpoint.services.resume import resume

    h = Harness(asking({}))
    h.say("Email Bob")
    assert h.session_id
    fingerprint = h.open_interrupt()["action"]["fingerprint"]
    tokens = spent_tokens(h)
    events, items = len(h.events()), table_items()
    calls: list[str] = []
    h.store.client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    for stale in ("0" * 64, "", fingerprint.upper()):
        with pytest.raises(Refusal) as info:
            resume(h.store, h.parking, h.caller, h.session_id, "int-ok", True, expect_fingerprint=stale)
        assert (info.value.code, info.value.param) == ("stale_approval", "expect_fingerprint")
        assert info.value.body()["error"]["fingerprint"] == fingerprint
    assert calls == ["GetItem"] * 3  # one read each, no write
    assert h.view()["status"] == "interrupted" and len(h.events()) == events and table_items() == items
    assert tokens == []
    calls.clear()
    out = resume(h.store, h.parking, h.caller, h.session_id, "int-ok", True, expect_fingerprint=fingerprint)
    assert out.noop is False and calls == ["GetItem", "UpdateItem", "GetItem"] and len(tokens) == 1
    h.wake("int-ok", "resumed")
    assert h.view()["interrupts"] == [] and h.view()["status"] == "done"


def test_a3_an_interrupt_without_an_action_refuses_any_expected_fingerprint() -> None:
    from holdpoint.services.resume import resume

    h = Harness(origin="operator")
    h.say("say hi")
    assert h.session_id
    sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id, reason="review", payload=None,
                             global_=True, interrupt_id="int-op", expires_in=None, request_id="req-1")
    with pytest.raises(Refusal) as info:
        resume(h.store, h.parking, h.caller, h.session_id, "int-op", None, expect_fingerprint="0" * 64)
    assert info.value.code == "stale_approval"
    assert resume(h.store, h.parking, h.caller, h.session_id, "int-op", None).noop is False


def test_a3_a_session_keeps_the_agent_config_it_started_with_across_an_agent_update() -> None:
    from holdpoint.outbound import workers
    from holdpoint.services.resume import resume

    h = Harness(asking({}))
    h.say("Email Bob")
    assert h.session_id
    before = h.open_interrupt()["action"]
    other: list[dict[str, Any]] = []
    workers.register("a3-other", lambda req: (other.append(req), {"actions": []})[1])
    h.store.put_agent(h.caller.tenant, "assistant", {"worker": {"python": "a3-other"}, "tools": [TOOLS[1]],
                                                     "llm": {"provider": "scripted", "script": []}})
    assert h.open_interrupt()["action"] == before
    resume(h.store, h.parking, h.caller, h.session_id, "int-ok", "yes", expect_fingerprint=before["fingerprint"])
    h.wake("int-ok", "resumed")
    assert other == []  # the new worker was never asked
    [result] = [c for c in h.state().calls.values() if c.kind == "tool_call"]
    assert result.status != "open" and result.result == "answer yes"
    assert h.view()["status"] == "done"
    assert agent_digest(h.state().header.agent_item) == before["agent_version"]


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
@pytest.mark.usefixtures("handlers")
def test_a3_both_resume_routes_answer_409_stale_approval_and_accept_the_right_fingerprint() -> None:
    h = Harness(asking({}), tenant="dev")
    sid = start_session(h)
    fingerprint = h.open_interrupt()["action"]["fingerprint"]
    before = table_items()
    status, out = call_resume(sid, "int-ok", {"payload": True, "expect_fingerprint": "f" * 64})
    assert status == 409 and out["error"]["code"] == "stale_approval", out
    assert out["error"]["param"] == "expect_fingerprint" and out["error"]["fingerprint"] == fingerprint
    status, out = call_api("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": "int-ok",
                                                                 "payload": True, "expect_fingerprint": "f" * 64})
    assert status == 409 and out["error"]["code"] == "stale_approval", out
    status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts/int-ok/resume",
                           {"payload": True, "expect_fingerprint": 7})
    assert status == 400 and out["error"]["param"] == "expect_fingerprint", out
    assert table_items() == before and h.view()["status"] == "interrupted"
    status, out = call_resume(sid, "int-ok", {"payload": True, "expect_fingerprint": fingerprint})
    assert (status, out) == (200, {"ok": True, "interrupt_id": "int-ok", "noop": False})


@pytest.mark.usefixtures("aws")  # reads the table, the timers or the signing key on moto
@pytest.mark.usefixtures("handlers")
def test_a_percent_encoded_interrupt_id_is_the_id_it_encodes() -> None:
    """API Gateway decodes path parameters; Powertools routes on the raw path. `int%3Aok` is `int:ok`."""
    h = Harness(asking({}), tenant="dev")
    sid = start_session(h)
    status, out = call_api("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "interrupt_id": "int:ok"},
                           origin="operator")
    assert status == 200, out
    event = http_event("POST", f"/v1/sessions/{sid}/interrupts/int%3Aok/resume", {"payload": None},
                       route_key="POST /v1/sessions/{session_id}/interrupts/{interrupt_id}/resume",
                       path_params={"session_id": sid, "interrupt_id": "int:ok"}, origin="operator")
    assert parse(RESUME.handler(event, CONTEXT)) == (200, {"ok": True, "interrupt_id": "int:ok", "noop": False})
    event["rawPath"] = f"/v1/sessions/{sid}/interrupts/int%3Aok/resume"
    assert parse(API.handler(event, CONTEXT))[1]["interrupt_id"] == "int:ok"
