"""The MCP server's pure translations (holdpoint.bridges.mcp.translation, PROTOCOL.md §9): a response schema onto
MCP's restricted elicitation schema (or refused naming the field), an elicitation's answer as the
resume payload, the envelope, and an approval's id."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.bridges.mcp import models
from holdpoint.bridges.mcp import translation as mcp
from holdpoint.core.errors import Refusal, RpcError
from holdpoint.core.state import Interrupt


def test_mcp_elicitation_schema_keeps_a_flat_form() -> None:
    schema = {"type": "object", "required": ["approved"], "properties": {
        "approved": {"type": "boolean", "title": "Approve"}, "note": {"type": "string", "maxLength": 200},
        "count": {"type": "integer", "minimum": 1}, "env": {"type": "string", "enum": ["dev", "prod"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2}}}
    assert mcp.elicitation_schema(schema, []) == schema


@pytest.mark.parametrize(("schema", "param"), [
    ({"type": "object", "properties": {"change": {"type": "object"}}}, "response_schema.properties.change.type"),
    ({"type": "object", "properties": {"id": {"type": "string", "pattern": "^x"}}},
     "response_schema.properties.id.pattern"),
    ({"type": "object", "properties": {"at": {"type": "string", "format": "ipv4"}}},
     "response_schema.properties.at.format"),
    ({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "string"}}}},
     "response_schema.properties.xs.items"),
    ({"type": "array", "items": {}}, "response_schema.type"),
    ({"type": "object", "properties": {}, "oneOf": []}, "response_schema.oneOf"),
    ({"type": "object", "properties": {}, "additionalProperties": True}, "response_schema.additionalProperties"),
])
def test_mcp_elicitation_schema_refuses_what_does_not_fit_naming_the_field(schema: dict[str, Any],
                                                                          param: str) -> None:
    with pytest.raises(Refusal) as refused:
        mcp.elicitation_schema(schema, [])
    assert refused.value.param == param


def test_mcp_elicitation_without_a_schema_asks_a_choice_or_approval() -> None:
    assert mcp.elicitation_schema(None, [])["properties"] == {"approved": {"type": "boolean", "title": "Approve"}}
    choice = mcp.elicitation_schema(None, [{"label": "Ship", "value": "ship"}])["properties"]["choice"]
    assert choice["oneOf"] == [{"const": "0", "title": "Ship"}]


def interrupt(payload: Any, schema: Any = None) -> Interrupt:
    return Interrupt(interrupt_id="int_1", origin="client", reason="approval", payload=payload, created_at="t",
                     anchor=None, dedup_key="k", response_schema=schema)


def test_mcp_answer_from_maps_a_choice_back_to_its_value_and_a_decline_to_cancelled() -> None:
    options = interrupt({"message": "q", "metadata": {"options": [{"label": "Ship", "value": {"go": 1}}]}})
    accepted = models.Elicited(action="accept", content={"choice": "0"})
    assert mcp.answer_from(accepted, options) == {"status": "resolved", "payload": {"go": 1}}
    with pytest.raises(Refusal):
        mcp.answer_from(models.Elicited(action="accept", content={"choice": "7"}), options)
    assert mcp.answer_from(models.Elicited(action="decline"), options) == {"status": "cancelled"}
    plain = interrupt({"message": "q"})
    assert mcp.answer_from(models.Elicited(action="accept", content={"approved": True}), plain) == {"approved": True}


def test_mcp_envelope_names_the_missing_key_and_ids_split_or_are_not_found() -> None:
    with pytest.raises(RpcError) as missing:
        mcp.envelope({})
    assert (missing.value.code, missing.value.param) == (mcp.INVALID_PARAMS, "params._meta")
    meta = {"_meta": {mcp.VERSION_KEY: "2026-07-28", mcp.CAPABILITIES_KEY: {"extensions": {mcp.TASKS: {}}}}}
    version, caps = mcp.envelope(meta)
    assert version == "2026-07-28" and mcp.has_tasks(caps) and not mcp.has_form_elicitation(caps)
    assert mcp.split_id("ses_a~int_b", "id") == ("ses_a", "int_b")
    for bad in ("ses_a", "~int_b", "ses a~int_b"):
        with pytest.raises(Refusal) as refused:
            mcp.split_id(bad, "id")
        assert refused.value.code == "not_found"
