"""Issue 19, classes 1 and 4: evaluating a tenant's JSON Schema retrieves nothing and does bounded
work. Retrieval: a tool `input`/`output` schema whose `$ref` points outside itself is refused where
it is declared, and one stored anyway is never fetched when the tool is called. Work: regexes run
on RE2, every evaluation stops past `schemas.MAX_STEPS`, `multipleOf` is exact, `uniqueItems`,
`enum` and `const` are linear. Each probe either hung, fetched, or raised on the code before."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from holdpoint.core import schemas
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.calls import output_problem
from holdpoint.core.proposals import check_arguments
from tests.security.probes import refusal, table_count
from tests.security.test_declarations import SCRIPTED, refusals
from tests.stack import Api

EVIL = "a" * 40 + "!"  # ~2^40 steps for Python's re against ^(a+)+$


def chain(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    """`$defs` each `anyOf` pointing twice at the next: 2^depth paths when every branch fails."""
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(depth)}
    defs[f"d{depth}"] = leaf
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def agent_state(tool: dict[str, Any]) -> Any:
    """Just what `check_arguments` and `output_problem` read: the session's agent and its tools."""
    config = AgentConfig.model_validate({"tools": [{"name": "t", **tool}]})
    return SimpleNamespace(header=SimpleNamespace(agent=config, config=lambda: config))


@pytest.fixture()
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server that serves a schema and records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()


# --- class 1: retrieval ----------------------------------------------------------------------------


def remote_refs(base: str) -> list[dict[str, Any]]:
    return [{"$ref": f"{base}/x.json"}, {"$ref": "file:///etc/passwd"},
            {"$id": f"{base}/root.json", "$ref": "other.json"},
            {"$id": f"{base}/root.json", "properties": {"a": {"$ref": "other.json#/a"}}}]


@pytest.mark.parametrize("field", ["input", "output"])
def test_schema_retrieval_remote_refs_in_tool_schemas_are_refused_at_declaration(field: str) -> None:
    for schema in remote_refs("http://127.0.0.1:9"):
        problem = schemas.tools_error([{"name": "ok"}, {"name": "t", field: schema}])
        assert problem is not None and problem[0] == f"tools[1].{field}", (schema, problem)
        assert "references inside itself" in problem[1]


def test_schema_retrieval_tool_call_with_a_stored_remote_ref_fetches_nothing(
        schema_server: tuple[str, list[str]]) -> None:
    """An agent stored before the declaration check (or behind the API's back): its tool's schemas
    refer to a server that would answer; calling the tool never asks it."""
    base, hits = schema_server
    for schema in remote_refs(base):
        state = agent_state({"input": schema, "output": schema})
        checked = check_arguments(state, "t", '{"a": 1}')
        assert checked["status"] == "invalid" and "cannot be evaluated" in checked["error"], checked
        problem = output_problem(state, SimpleNamespace(name="t"), {"a": 1})
        assert problem is not None and "cannot be evaluated" in problem
    assert hits == []


# --- class 4: work -----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_schema_work_catastrophic_regex_in_response_schema_at_resume() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}
    assert schemas.schema_error(schema) is None  # RE2 runs it in linear time: nothing to refuse
    failed = schemas.answer_error(schema, {"name": EVIL})
    assert failed is not None and failed[0] == "payload.name" and "does not match" in failed[1]
    assert schemas.answer_error(schema, {"name": "a" * 40}) is None


@pytest.mark.timeout(60)
def test_schema_work_catastrophic_regex_in_tool_schemas_at_call() -> None:
    state = agent_state({"input": {"patternProperties": {"^(a+)+$": {"type": "integer"}}},
                         "output": {"additionalProperties": False, "patternProperties": {"^(b+)+$": {}}}})
    checked = check_arguments(state, "t", json.dumps({EVIL: 1, "a" * 40: "x"}))
    assert checked["status"] == "invalid" and "is not of type 'integer'" in checked["error"], checked
    problem = output_problem(state, SimpleNamespace(name="t"), {"b" * 40 + "!": 1})
    assert problem is not None and "not allowed" in problem


@pytest.mark.parametrize(("schema", "value", "passes"), [
    ({"pattern": "^a$"}, "a\n", False),
    ({"patternProperties": {"^a$": False}}, {"a\n": 1}, True),
    ({"additionalProperties": False, "patternProperties": {"^a$": True}}, {"a\n": 1}, False)])
def test_schema_work_every_regex_runs_on_re2(schema: dict[str, Any], value: Any, passes: bool) -> None:
    """RE2's `$` is ECMA-262's (the end of the text); Python's `re` also matches before a final
    newline, so each outcome here is the opposite of what Python's engine gives."""
    assert (schemas.evaluate(schema, value) is None) is passes


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)b", "(?<!a)b", "a++"])
def test_schema_work_patterns_re2_cannot_run_are_refused_at_declaration(pattern: str) -> None:
    error = schemas.schema_error({"properties": {"a": {"pattern": pattern}}})
    assert error is not None and "RE2 cannot run" in error, error
    tool = schemas.tools_error([{"name": "t", "output": {"patternProperties": {pattern: {}}}}])
    assert tool is not None and tool[0] == "tools[0].output" and "RE2 cannot run" in tool[1]


@pytest.mark.timeout(120)
def test_schema_work_exponential_anyof_chain_is_refused_at_declaration() -> None:
    error = schemas.schema_error(chain(40, {"type": "integer"}))
    assert error == f"does more than {schemas.MAX_STEPS} steps of work on sample values"
    tool = schemas.tools_error([{"name": "t", "input": chain(40, {"type": "integer"})}])
    assert tool is not None and tool[0] == "tools[0].input" and "steps of work" in tool[1]


def test_schema_work_one_agents_tool_schemas_share_one_budget() -> None:
    """Each schema alone is under the budget; declared together, their probes are not."""
    one = chain(8, {"type": "integer"})
    assert schemas.schema_error(one) is None
    problem = schemas.tools_error([{"name": f"t{i}", "input": one} for i in range(40)])
    assert problem is not None and "steps of work" in problem[1] and problem[0].endswith(".input")


@pytest.mark.timeout(120)
def test_schema_work_exponential_chain_that_passes_its_probes_is_bounded_at_resume() -> None:
    """The probes take the first branch every time; a longer string fails every branch."""
    schema = chain(40, {"maxLength": 4})
    assert schemas.schema_error(schema) is None
    failed = schemas.answer_error(schema, "aaaaa")
    assert failed == ("payload", f"the interrupt's response_schema does more than {schemas.MAX_STEPS} "
                                 "steps of work on this value")
    checked = check_arguments(agent_state({"input": schema}), "t", '"aaaaa"')
    assert checked["status"] == "invalid" and "steps of work" in checked["error"]


def test_schema_work_multiple_of_a_400_digit_integer_is_a_plain_answer() -> None:
    assert schemas.answer_error({"multipleOf": 0.5}, 10**400 + 1) is None  # any integer is
    failed = schemas.answer_error({"multipleOf": 0.3}, 10**400 + 1)
    assert failed is not None and "is not a multiple of 0.3" in failed[1]
    assert schemas.evaluate({"multipleOf": 0.1}, 0.3) is None  # exact decimals, as written in JSON
    assert schemas.evaluate({"multipleOf": 1e-300}, int("9" * 4_300)) is None


@pytest.mark.timeout(60)
def test_schema_work_unique_items_on_a_large_array_is_linear() -> None:
    items: list[Any] = [{"i": i} for i in range(20_000)]
    failed = schemas.evaluate({"uniqueItems": True}, [*items, {"i": 7}])
    assert failed is not None and failed.judged and "non-unique" in failed.message
    assert schemas.evaluate({"uniqueItems": True}, items) is None
    # JSON equality: 1 and 1.0 are one value, true and 1 are not, key order does not count.
    assert schemas.evaluate({"uniqueItems": True}, [1, 1.0]) is not None
    assert schemas.evaluate({"uniqueItems": True}, [1, True, 0, False, None, "1"]) is None
    assert schemas.evaluate({"uniqueItems": True}, [{"a": 1, "b": [2]}, {"b": [2], "a": 1}]) is not None
    too_many = schemas.evaluate({"uniqueItems": True}, [{"i": i} for i in range(200_000)])
    assert too_many is not None and not too_many.judged and "steps of work" in too_many.message


def test_schema_work_enum_and_const_are_json_equality() -> None:
    assert schemas.evaluate({"enum": [1, "a", {"x": [1]}]}, 1.0) is None
    assert schemas.evaluate({"enum": [1, "a", {"x": [1]}]}, {"x": [1.0]}) is None
    assert schemas.evaluate({"enum": [1]}, True) is not None
    assert schemas.evaluate({"const": False}, 0) is not None
    assert schemas.evaluate({"items": {"const": {"a": 1}}}, [{"a": 1}, {"a": 1.0}]) is None


def test_schema_work_unevaluated_keywords_are_refused() -> None:
    for keyword in sorted(schemas.UNSUPPORTED):
        assert "not supported" in (schemas.schema_error({keyword: False}) or "")
        failed = schemas.evaluate({keyword: False}, {"a": 1})
        assert failed is not None and not failed.judged


# --- over HTTP on the local stack ---------------------------------------------------------------------


def test_schema_retrieval_and_work_hostile_tool_schemas_are_400_and_record_nothing(api: Api, stack: Any) -> None:
    before = table_count(stack)
    probes = [({"llm": SCRIPTED, "tools": [{"name": "t", "input": schema}]}, "tools[0].input")
              for schema in remote_refs("http://127.0.0.1:9")]
    probes += [({"llm": SCRIPTED, "tools": [{"name": "t"}, {"name": "u", "output": schema}]}, "tools[1].output")
               for schema in [{"$ref": "file:///etc/passwd"}, {"pattern": r"(a)\1"}, chain(40, {"type": "integer"}),
                              {"type": "nope"}, {"properties": {"a": {"$ref": "#/$defs/none"}}}]]
    assert refusals(api, probes) == []
    assert table_count(stack) == before


def test_schema_work_catastrophic_regex_in_response_schema_over_http(api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    schema = {"type": "object", "properties": {"name": {"pattern": "^(a+)+$"}}, "required": ["name"]}
    api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "interrupt_id": "int-re",
                                                      "response_schema": schema})
    api.wait_status(sid, "interrupted")
    before = table_count(stack)
    refusal(api.resume(sid, "int-re", {"name": EVIL}), 400, code="invalid_resume", param="payload.name")
    assert table_count(stack) == before
    assert api.resume(sid, "int-re", {"name": "aaa"}).status_code == 200
