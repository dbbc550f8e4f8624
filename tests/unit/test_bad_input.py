"""Bad input (PROTOCOL.md §5, docs/SECURITY.md): a 4xx naming the field, never a 5xx or a stack trace, nothing recorded.

Explicit cases first, then a property test that fuzzes every POST/PUT route of the API's own
OpenAPI document (plus the resume Lambda) with arbitrary JSON bodies and path ids.
"""

from __future__ import annotations

import base64
import json
import os
import string
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holdpoint import assembly
from holdpoint.services import streams
from tests.conftest import moto_aws
from tests.harness import Harness
from tests.unit.test_api import (
    API,
    CONTEXT,
    assert_error,
    call_api,
    call_resume,
    http_event,
    parse,
    start_session,
    table_items,
)

MIB = 1_048_576


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, str]]:
    """One moto AWS for this module: every test here but two only sends what must be refused and
    checks the table did not change, so they share one parked session (`sid`) rather than run the
    engine to park one each (most of this module's time). No long poll waits here (the cap at 0 s):
    a fuzzed AG-UI run valid enough to start a turn, which no engine runs here, waited out the
    25 s cap for its end."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv(streams.CAP_ENV, "0")
        yield from moto_aws(monkeypatch)


def parked_session() -> str:
    """A new live session of tenant `dev`, parked on the seed's `confirm` interrupt."""
    h = Harness(tenant="dev")
    session_id = start_session(h)
    assert h.view()["interrupts"]
    return session_id


@pytest.fixture(scope="module")
def sid(aws: dict[str, str]) -> Iterator[str]:
    """The module's parked session, for the tests whose requests are refused (or leave it parked)."""
    assembly.reset()
    yield parked_session()
    assembly.reset()


@pytest.fixture
def own_sid(sid: str) -> str:
    """A parked session of the test's own, for a test that answers or raises an interrupt."""
    return parked_session()


def refused(method: str, path: str, body: Any = None, *, status: int | None = None, code: str | None = None,
            param: str | None = None, **kw: Any) -> dict[str, Any]:
    """Call the API, assert a well-formed refusal, and that the table did not change."""
    before = table_items()
    got_status, got = call_api(method, path, body, **kw)
    assert_error(got_status, got, status, code=code, param=param)
    assert table_items() == before, (method, path, got)
    return got["error"]


def msg(**fields: Any) -> dict[str, Any]:
    return {"type": "client.message", "message": {"role": "user", "content": "hi", **fields}}


# --- body shape -------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["{not json", "{\"type\": ", "\x00", "{'type': 'client.message'}", "NaN]"])
def test_invalid_json(sid: str, raw: str) -> None:
    for path in ("/v1/sessions", f"/v1/sessions/{sid}/inputs", f"/v1/sessions/{sid}/interrupts",
                 f"/v1/sessions/{sid}/calls/settle"):
        err = refused("POST", path, raw_body=raw, status=400, param="body")
        assert "JSON" in err["message"] or "object" in err["message"], err
    refused("PUT", "/v1/agents/a1", raw_body=raw, status=400, param="body")
    before = table_items()
    status, body = call_resume(sid, "int-1", raw_body=raw)
    assert_error(status, body, 400, param="body")
    assert table_items() == before


@pytest.mark.parametrize("raw", ["[]", "[1, 2]", "\"text\"", "42", "true", "null", ""])
def test_body_must_be_an_object(sid: str, raw: str) -> None:
    for path in ("/v1/sessions", f"/v1/sessions/{sid}/inputs", f"/v1/sessions/{sid}/interrupts"):
        refused("POST", path, raw_body=raw, status=400, param="body")
    refused("PUT", "/v1/agents/a1", raw_body=raw, status=400, param="body")


def test_missing_and_unknown_type(sid: str) -> None:
    refused("POST", "/v1/sessions", {"agent_id": "assistant", "message": {"role": "user"}}, status=400, param="type")
    refused("POST", f"/v1/sessions/{sid}/inputs", {}, status=400, param="type")
    for bad in ("client.nope", "", "CLIENT.MESSAGE", "tool.call", "session.start"):
        refused("POST", f"/v1/sessions/{sid}/inputs", {"type": bad}, status=422, code="unknown_input_type",
                param="type")
    for wrong in (5, None, ["client.message"], {"x": 1}):
        status, body = call_api("POST", "/v1/sessions", {"type": wrong, "agent_id": "assistant"})
        assert_error(status, body, param="type")


def test_raise_interrupt_needs_a_reason(sid: str) -> None:
    err = refused("POST", f"/v1/sessions/{sid}/interrupts", {"payload": {"a": 1}}, status=400, param="reason")
    assert "required" in err["message"].lower()
    refused("POST", f"/v1/sessions/{sid}/interrupts", {"reason": ""}, status=400, param="reason")
    refused("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "r" * 257}, status=400, param="reason")
    refused("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "r", "reasn": "typo"}, status=400, param="reasn")


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/v1/sessions", {**msg(), "agent_id": 7}, "agent_id"),
    ("/v1/sessions", {**msg(content=5), "agent_id": "assistant"}, "message.content"),
    ("/v1/sessions", {**msg(content={"a": 1}), "agent_id": "assistant"}, "message.content"),
    ("/v1/sessions", {**msg(role="robot"), "agent_id": "assistant"}, "message.role"),
    ("/v1/sessions", {**msg(tool_calls="x"), "agent_id": "assistant"}, "message.tool_calls"),
    ("/v1/sessions", {**msg(tool_calls=[{"id": "c1", "function": {"name": ""}}]), "agent_id": "assistant"},
     "message.tool_calls[0].function.name"),
    ("/v1/sessions", {"type": "client.message", "agent_id": "assistant", "message": "hi"}, "message"),
    ("/v1/sessions", {**msg(), "agent_id": "assistant", "queue": "true"}, "queue"),
    ("/v1/sessions", {**msg(), "agent_id": "assistant", "extra": 1}, "extra"),
    ("/v1/sessions", {"type": "client.messages", "agent_id": "assistant", "messages": "hi"}, "messages"),
    ("/v1/sessions", {"type": "client.messages", "agent_id": "assistant", "messages": []}, "messages"),
    ("/v1/sessions", {"type": "client.messages", "agent_id": "assistant", "messages": [{"role": "user"}, 3]},
     "messages[1]"),
    ("/v1/sessions/{sid}/interrupts", {"reason": 5}, "reason"),
    ("/v1/sessions/{sid}/interrupts", {"reason": "r", "global": "yes"}, "global"),
    ("/v1/sessions/{sid}/interrupts", {"reason": "r", "global": 1}, "global"),
    ("/v1/sessions/{sid}/interrupts", {"reason": "r", "expires_in": "10"}, "expires_in"),
    ("/v1/sessions/{sid}/interrupts", {"reason": "r", "expires_in": 1.5}, "expires_in"),
    ("/v1/sessions/{sid}/interrupts", {"reason": "r", "expires_in": 0}, "expires_in"),
    ("/v1/sessions/{sid}/interrupts", {"reason": "r", "expires_in": 10**30}, "expires_in"),
    ("/v1/sessions/{sid}/inputs", {"type": "client.action", "name": "go", "queue": "yes"}, "queue"),
    ("/v1/sessions/{sid}/inputs", {"type": "client.action", "name": ""}, "name"),
    ("/v1/sessions/{sid}/inputs", {"type": "tool.result", "id": "c1", "attempt": "2"}, "attempt"),
    ("/v1/sessions/{sid}/inputs", {"type": "tool.error", "id": "bad id"}, "id"),
    ("/v1/sessions/{sid}/calls/settle", {"type": "model.result", "id": "c1"}, "type"),
    ("/v1/sessions/{sid}/calls/settle", {"type": "tool.result", "id": 5}, "id"),
    ("/v1/sessions/{sid}/calls/settle", {"type": "tool.result", "id": "c1", "attempt": "1"}, "attempt"),
    ("/v1/sessions/{sid}/calls/settle", {"type": "tool.result", "id": "c1", "attempt": 0}, "attempt"),
    ("/v1/sessions/{sid}/calls/settle", {"type": "tool.result"}, "id"),
])
def test_wrong_types_name_the_field(sid: str, path: str, body: dict[str, Any], param: str) -> None:
    refused("POST", path.format(sid=sid), body, status=400, param=param)


@pytest.mark.parametrize(("body", "param"), [
    ({"tools": "none"}, "tools"),
    ({"tools": [{"name": "bad name!"}]}, "tools[0].name"),
    ({"tools": [{"name": "t"}] * 257}, "tools"),
    ({"system": "s" * 131_073}, "system"),
    ({"model": "m" * 257}, "model"),
    ({"llm": {"provider": "nobody"}}, "llm.provider"),
    ({"worker": {"timeout_secs": "inf"}}, "worker.timeout_secs"),
    ({"worker": {"timeout_secs": -1}}, "worker.timeout_secs"),
    ({"worker": {"url": "http://example.com/hook"}}, "worker.url"),
    ({"worker": {"url": "u" * 3000}}, "worker.url"),
    ({"worker": {"secret": "plain"}}, "worker.secret"),
    ({"interrupt_expires_in": "60"}, "interrupt_expires_in"),
])
def test_bad_agent_config(aws: dict[str, str], body: dict[str, Any], param: str) -> None:
    assembly.reset()
    refused("PUT", "/v1/agents/a1", body, status=400, param=param)


def test_agent_config_over_the_stored_limit(aws: dict[str, str]) -> None:
    assembly.reset()
    config = {"tools": [{"name": f"t{i}", "description": "d" * 16_000} for i in range(20)]}
    refused("PUT", "/v1/agents/a1", config, status=413, code="payload_too_large")


# --- ids ---------------------------------------------------------------------------------------------

BAD_IDS = ["a" * 65, "has space", "semi;colon", "ümlaut", "-leading", ".dot", "slash%2Fx", "a\u0000b", "%00"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_invalid_ids_in_paths_are_404(sid: str, bad: str) -> None:
    enc = quote(bad, safe="")
    refused("GET", f"/v1/sessions/{enc}", status=404, code="not_found")
    refused("GET", f"/v1/sessions/{enc}/events", status=404, code="not_found")
    refused("POST", f"/v1/sessions/{enc}/inputs", msg(), status=404, code="not_found")
    refused("POST", f"/v1/sessions/{enc}/interrupts", {"reason": "r"}, status=404, code="not_found")
    refused("POST", f"/v1/sessions/{enc}/calls/settle", {"type": "tool.result", "id": "c1"}, status=404)
    refused("GET", f"/v1/agents/{enc}", status=404, code="not_found")
    refused("PUT", f"/v1/agents/{enc}", {}, status=400, param="agent_id")
    before = table_items()
    assert_error(*call_resume(bad, "int-1", {}), 404, code="not_found")
    assert_error(*call_resume(sid, bad, {}), 400, param="interrupt_id")
    assert table_items() == before


@pytest.mark.parametrize("field", ["agent_id", "turn_id"])
@pytest.mark.parametrize("bad", ["a" * 65, "x y", "", "ü"])
def test_invalid_ids_in_bodies_are_400(sid: str, field: str, bad: str) -> None:
    refused("POST", "/v1/sessions", {**msg(), "agent_id": "assistant", field: bad}, status=400, param=field)


def test_invalid_message_and_interrupt_ids(sid: str) -> None:
    refused("POST", f"/v1/sessions/{sid}/inputs", msg(id="x" * 65), status=400, param="message.id")
    refused("POST", f"/v1/sessions/{sid}/inputs", {"type": "interrupt.resume", "interrupt_id": "a b"},
            status=400, param="interrupt_id")
    refused("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "r", "interrupt_id": "i" * 65}, status=400,
            param="interrupt_id")


# --- sizes ---------------------------------------------------------------------------------------------


def test_body_over_one_mib_is_413(sid: str) -> None:
    big = json.dumps({**msg(content="x" * MIB), "agent_id": "assistant"})
    for method, path in (("POST", "/v1/sessions"), ("POST", f"/v1/sessions/{sid}/inputs"),
                         ("POST", f"/v1/sessions/{sid}/interrupts"), ("PUT", "/v1/agents/a1")):
        refused(method, path, raw_body=big, status=413, code="payload_too_large")
    # Measured in bytes, not characters, and after base64 decoding.
    wide = json.dumps({**msg(content="é" * (MIB // 2 + 10)), "agent_id": "assistant"}, ensure_ascii=False)
    refused("POST", "/v1/sessions", raw_body=wide, status=413)
    event = http_event("POST", "/v1/sessions", raw_body=base64.b64encode(big.encode()).decode())
    event["isBase64Encoded"] = True
    assert_error(*parse(API.handler(event, CONTEXT)), 413)
    before = table_items()
    assert_error(*call_resume(sid, "int-1", raw_body=json.dumps({"payload": "é" * (MIB // 2 + 10)},
                                                                ensure_ascii=False)), 413)
    assert table_items() == before


def test_base64_bodies_are_decoded(sid: str) -> None:
    ok = json.dumps({**msg(content="say hi"), "agent_id": "assistant"})
    event = http_event("POST", "/v1/sessions", raw_body=base64.b64encode(ok.encode()).decode())
    event["isBase64Encoded"] = True
    status, body = parse(API.handler(event, CONTEXT))
    assert status == 202, body
    event = http_event("POST", "/v1/sessions", raw_body="!!not base64!!")
    event["isBase64Encoded"] = True
    before = table_items()
    assert_error(*parse(API.handler(event, CONTEXT)), 400, param="body")
    assert table_items() == before


def test_items_too_large_to_store_are_413_or_go_to_s3(own_sid: str) -> None:
    sid = own_sid
    # Under 1 MiB as UTF-8, but over DynamoDB's 400 KB per item once stored JSON-escaped: a
    # message goes to S3 by reference; an interrupt payload (kept on the item) is refused.
    wide = json.dumps({**msg(content="é" * 200_000), "agent_id": "assistant"}, ensure_ascii=False)
    status, body = call_api("POST", "/v1/sessions", raw_body=wide)
    assert status == 202, body
    stored = call_api("GET", f"/v1/sessions/{body['session_id']}")[1]["messages"][0]["content"]
    assert stored == "é" * 200_000
    refused("POST", f"/v1/sessions/{sid}/interrupts", raw_body=json.dumps(
        {"reason": "r", "payload": "é" * 200_000}, ensure_ascii=False), status=413, param="payload")
    iid = call_api("GET", f"/v1/sessions/{sid}")[1]["interrupts"][0]["interrupt_id"]
    # Resume payloads are checked before the write (moto, unlike DynamoDB, applies part of an
    # update_item it then refuses as too large, so the refusal must come first).
    big = json.dumps({"payload": {"text": "é" * 30_000}}, ensure_ascii=False)  # 60 KB sent, 180 KB stored
    for route in ("lambda", "path", "input"):
        before = table_items()
        if route == "lambda":
            status, body = call_resume(sid, iid, raw_body=big)
        elif route == "path":
            status, body = call_api("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", raw_body=big)
        else:
            status, body = call_api("POST", f"/v1/sessions/{sid}/inputs", raw_body=json.dumps(
                {"type": "interrupt.resume", "interrupt_id": iid, **json.loads(big)}, ensure_ascii=False))
        assert_error(status, body, 413, code="payload_too_large", param="payload")
        assert table_items() == before
    # The interrupt is still open: a normal resume still works.
    assert call_resume(sid, iid, {"payload": {"approved": True}})[1]["noop"] is False


def test_too_many_messages(sid: str) -> None:
    many = [{"role": "user", "content": f"m{i}"} for i in range(10_001)]
    refused("POST", "/v1/sessions", {"type": "client.messages", "agent_id": "assistant", "messages": many},
            status=400, param="messages")
    # Within the schema, but more new messages than one conditional write can record.
    some = [{"role": "user", "content": f"m{i}"} for i in range(200)]
    err = refused("POST", "/v1/sessions", {"type": "client.messages", "agent_id": "assistant", "messages": some})
    assert err["param"] == "messages"
    tool_calls = [{"id": f"c{i}", "function": {"name": "f"}} for i in range(129)]
    refused("POST", "/v1/sessions", {**msg(role="assistant", tool_calls=tool_calls), "agent_id": "assistant"},
            status=400, param="message.tool_calls")


@pytest.mark.parametrize("depth", [65, 1_000, 10_000, 100_000])
def test_deep_nesting_never_crashes(sid: str, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    objects = '{"a":' * depth + "1" + "}" * depth
    bodies = [
        ("POST", "/v1/sessions", '{"type": "client.message", "agent_id": "assistant", "message": '
                                 '{"role": "user", "content": [' + objects + "]}}"),
        ("POST", f"/v1/sessions/{sid}/inputs", '{"type": "client.messages", "messages": [{"role": "user"}],'
                                               ' "client": ' + objects + "}"),
        ("POST", f"/v1/sessions/{sid}/interrupts", '{"reason": "r", "payload": ' + nested + "}"),
        ("POST", f"/v1/sessions/{sid}/calls/settle", '{"type": "tool.result", "id": "c1", "result": ' + nested + "}"),
        ("PUT", "/v1/agents/a1", '{"llm": {"provider": "scripted", "script": ' + nested + "}}"),
        ("POST", "/v1/sessions", nested),
        ("POST", "/v1/sessions", "[" * depth),
    ]
    for method, path, raw in bodies:
        refused(method, path, raw_body=raw, status=400, param="body")
    before = table_items()
    status, body = call_resume(sid, "int-1", raw_body='{"payload": ' + nested + "}")
    assert_error(status, body, 400, param="body")
    assert table_items() == before


def test_brackets_inside_strings_do_not_count_as_nesting(own_sid: str) -> None:
    sid = own_sid
    status, body = call_api("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "[" * 5_000, "payload": "{" * 9_000})
    assert_error(status, body, 400, param="reason")  # refused for its length, not its "depth"
    status, body = call_api("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "r[{", "payload": "{[" * 9_000})
    assert status == 200, body


def test_unknown_routes_and_missing_auth(sid: str) -> None:
    refused("GET", "/v1/nothing", status=404, code="not_found")
    refused("DELETE", f"/v1/sessions/{sid}", status=404, code="not_found")
    refused("POST", "/v1/sessions", {**msg(), "agent_id": "assistant"}, tenant=None, status=401,
            code="unauthorized")


def test_other_tenant_is_404_and_records_nothing(sid: str) -> None:
    refused("POST", f"/v1/sessions/{sid}/inputs", msg(), tenant="other", status=404)
    refused("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "r"}, tenant="other", status=404)
    refused("POST", f"/v1/sessions/{sid}/calls/settle", {"type": "tool.result", "id": "c1"}, tenant="other",
            status=404)
    refused("GET", f"/v1/sessions/{sid}/events", tenant="other", status=404)


# --- fuzzing from the OpenAPI document --------------------------------------------------------------


def _openapi() -> dict[str, Any]:
    status, doc = parse(API.handler(http_event("GET", "/v1/openapi.json"), CONTEXT))
    assert status == 200
    return doc


DOC = _openapi()
WRITE_ROUTES = sorted((path, method) for path, ops in DOC["paths"].items() for method in ops
                      if method in ("post", "put"))

JSON_LEAVES = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40))
JSON = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
GOOD_ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}", fullmatch=True)
ANY_ID = GOOD_ID | st.text(max_size=80) | st.text(alphabet=string.ascii_letters + "._:-%/", min_size=1, max_size=70)


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = DOC["components"]["schemas"][name]
    return schema


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values near the schema (right keys, near-valid values) mixed with arbitrary JSON."""
    schema = _resolve(schema)
    if depth > 4:
        return JSON
    near: list[st.SearchStrategy[Any]] = []
    for key in ("oneOf", "anyOf"):
        if key in schema:
            near += [from_schema(s, depth + 1) for s in schema[key]]
    if "enum" in schema:
        near.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        near.append(st.just(schema["const"]))
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        fields = {k: from_schema(v, depth + 1) for k, v in props.items()}
        required = {k: v for k, v in fields.items() if k in set(schema.get("required") or ())}
        optional = {k: v for k, v in fields.items() if k not in required}
        extra = st.dictionaries(st.text(max_size=10), JSON, max_size=1)
        # Sometimes every required field (likelier to get past validation), sometimes any subset.
        near.append(st.fixed_dictionaries(required, optional=optional))
        near.append(st.fixed_dictionaries({}, optional=fields).flatmap(lambda d: extra.map(lambda e: {**e, **d})))
    elif kind == "string":
        near.append((GOOD_ID | st.just("assistant")) if "pattern" in schema else st.text(max_size=300))
        if "maxLength" in schema:
            near.append(st.integers(schema["maxLength"] - 1, schema["maxLength"] + 1).map(lambda n: "a" * n))
    elif kind == "integer":
        near.append(st.integers(min_value=-5, max_value=2**64) | st.sampled_from([0, 1, 31_536_001]))
    elif kind == "boolean":
        near.append(st.booleans())
    elif kind == "array":
        items = schema.get("items") or {}
        near.append(st.lists(from_schema(items, depth + 1), max_size=3))
    return st.one_of(*near, JSON) if near else JSON


MESSAGE = {"role": "user", "content": "say hi"}
EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "/v1/sessions": [{"type": "client.message", "agent_id": "assistant", "message": MESSAGE},
                     {"type": "client.messages", "agent_id": "assistant", "messages": [MESSAGE]},
                     {"type": "client.action", "agent_id": "assistant", "name": "go", "args": {}}],
    "/v1/sessions/{session_id}/inputs": [{"type": "client.message", "message": MESSAGE, "queue": True},
                                         {"type": "interrupt.resume", "interrupt_id": "int-1", "payload": {}},
                                         {"type": "tool.result", "id": "c1", "result": "ok"}],
    "/v1/sessions/{session_id}/interrupts": [{"reason": "r", "payload": {}, "global": True, "expires_in": 60}],
    "/v1/sessions/{session_id}/calls/settle": [{"type": "tool.error", "id": "c1", "attempt": 1, "error": "x"}],
    "/v1/agents/{agent_id}": [{"model": "m", "system": "s", "tools": [{"name": "t"}],
                               "worker": {"url": "https://93.184.215.14/"}}],
}


def mutated(example: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A valid body with one field replaced by arbitrary JSON, dropped, or one key added."""
    keys = sorted(example)
    replace = st.tuples(st.sampled_from(keys), JSON).map(lambda kv: {**example, kv[0]: kv[1]})
    drop = st.sampled_from(keys).map(lambda k: {x: v for x, v in example.items() if x != k})
    add = st.tuples(st.text(max_size=12), JSON).map(lambda kv: {**example, kv[0]: kv[1]})
    return st.just(example) | replace | drop | add


def body_strategy(path: str, method: str) -> st.SearchStrategy[str | None]:
    op = DOC["paths"][path][method]
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    examples = [mutated(e) for e in EXAMPLES.get(path, [])]
    return st.one_of(
        *[e.map(json.dumps) for e in examples],
        from_schema(schema).map(json.dumps),
        JSON.map(json.dumps),
        st.text(max_size=60),
        st.none(),
    )


def _fill(path: str, ids: dict[str, str]) -> str:
    return path.format(**{k: quote(v, safe="") for k, v in ids.items()})


def check_reply(status: int, body: Any, before: int) -> None:
    assert status < 500, (status, body)
    if status >= 400:
        assert_error(status, body)
        assert table_items() == before, body
    else:
        assert isinstance(body, dict), body


FUZZ_EXAMPLES = int(os.environ.get("HOLDPOINT_FUZZ_EXAMPLES") or 150)
"""Examples per fuzzed route: 150 in `make test`; `make test-unit` runs fewer (every route, every
strategy branch, in seconds) and says so."""
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])


def test_the_fuzz_covers_every_write_route() -> None:
    assert ("/v1/sessions", "post") in WRITE_ROUTES and ("/v1/agents/{agent_id}", "put") in WRITE_ROUTES
    assert len(WRITE_ROUTES) >= 6, WRITE_ROUTES


@pytest.mark.parametrize(("path", "method"), WRITE_ROUTES)
def test_fuzz_write_routes(sid: str, path: str, method: str) -> None:
    id_names = [seg[1:-1] for seg in path.split("/") if seg.startswith("{")]

    @FUZZ
    @given(raw=body_strategy(path, method),
           ids=st.fixed_dictionaries({name: (st.just(sid) if name == "session_id" else GOOD_ID) | ANY_ID
                                      for name in id_names}),
           b64=st.booleans())
    def run(raw: str | None, ids: dict[str, str], b64: bool) -> None:
        before = table_items()
        event = http_event(method.upper(), _fill(path, ids), raw_body=raw)
        if b64 and raw is not None:
            event["body"] = base64.b64encode(raw.encode("utf-8", "surrogatepass")).decode()
            event["isBase64Encoded"] = True
        reply = API.handler(event, CONTEXT)
        if reply["statusCode"] == 200 and reply["headers"].get("Content-Type", "").startswith("text/event-stream"):
            assert all(isinstance(json.loads(line[6:]), dict) for line in reply["body"].splitlines()
                       if line.startswith("data: "))  # an AG-UI run's events
            return
        check_reply(*parse(reply), before)

    run()


def test_fuzz_resume_lambda(sid: str) -> None:
    schema = _resolve(DOC["paths"]["/v1/sessions/{session_id}/interrupts/{interrupt_id}/resume"]["post"]
                      ["requestBody"]["content"]["application/json"]["schema"])

    @FUZZ
    @given(raw=st.one_of(from_schema(schema).map(json.dumps), JSON.map(json.dumps), st.text(max_size=60), st.none()),
           session_id=st.just(sid) | ANY_ID, interrupt_id=GOOD_ID | ANY_ID)
    def run(raw: str | None, session_id: str, interrupt_id: str) -> None:
        before = table_items()
        status, body = call_resume(session_id, interrupt_id, raw_body=raw)
        check_reply(status, body, before)

    run()
