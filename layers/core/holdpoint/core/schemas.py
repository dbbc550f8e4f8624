"""Response schemas (A1): an interrupt may say what a valid answer looks like, as a JSON Schema.
The schema is checked where it is declared and the answer where it is given, so a bad answer is
refused before anything is recorded or a task token is spent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import Any

AGUI_STATUSES = frozenset({"resolved", "cancelled"})
PROBES: tuple[Any, ...] = (None, True, 0, "", [], {})  # one instance of each JSON type
MAX_SCHEMA_BYTES = 16_384  # stored on the interrupt item and read on every resume


@cache
def no_retrieval() -> Any:
    """An empty registry: a `$ref` resolves inside the schema or not at all (jsonschema would
    otherwise fetch remote references over the network). jsonschema and referencing load here,
    on first use: only interrupts with a response schema need them."""
    import referencing

    return referencing.Registry()


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def schema_error(schema: Any) -> str | None:
    """Why `schema` is not a JSON Schema (object or boolean, valid under its own metaschema), or None."""
    import jsonschema
    from jsonschema import validators
    if not isinstance(schema, (dict, bool)):
        return "must be a JSON Schema (an object or a boolean)"
    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        return "is not a valid JSON Schema: $schema must be a string"
    if len(json.dumps(schema, separators=(",", ":"))) > MAX_SCHEMA_BYTES:
        return f"is over {MAX_SCHEMA_BYTES} bytes as stored"
    refs = list(_refs(schema))
    if any(not ref.startswith("#") for ref in refs):
        return "may only use references inside itself ($ref starting with #)"
    validator = validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"is not a valid JSON Schema: {exc.message}"
    return _dangling(schema, validator.META_SCHEMA.get("$schema", ""), refs) or _endless(schema)


def _endless(schema: Any) -> str | None:
    """A schema that refers to itself without end (`{"$ref": "#"}`) cannot judge any answer:
    tried on one instance of each JSON type, it is refused now rather than at every resume."""
    from jsonschema import validators
    validator = validators.validator_for(schema)(schema, registry=no_retrieval())
    try:
        for probe in PROBES:
            validator.is_valid(probe)
    except RecursionError:
        return "refers to itself without end"
    return None


def _dangling(schema: Any, dialect: str, refs: list[str]) -> str | None:
    """A `$ref` that points nowhere is refused now: found only at resume, it would refuse every
    answer and leave the interrupt to expire."""
    import referencing
    import referencing.exceptions
    import referencing.jsonschema
    if not refs:
        return None
    spec = referencing.jsonschema.specification_with(dialect, default=referencing.jsonschema.DRAFT202012)
    resource = spec.create_resource(schema)
    resolver = referencing.Registry().with_resource(resource.id() or "", resource).crawl().resolver_with_root(resource)
    for ref in refs:
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return f"has a $ref that resolves to nothing: {ref}"
    return None


def declared(response_schema: Any, payload: Any) -> Any:
    """The interrupt's schema: the explicit field, else AG-UI's `payload.responseSchema`."""
    if response_schema is not None:
        return response_schema
    if isinstance(payload, dict):
        return payload.get("responseSchema")
    return None


def answer_of(payload: Any) -> tuple[bool, Any, str]:
    """What the schema applies to: (checked?, value, its param). An AG-UI answer `{status, payload,
    responder}` is checked on its inner `payload` when `resolved`; a `cancelled` one is not checked."""
    if isinstance(payload, dict) and payload.get("status") in AGUI_STATUSES and set(payload) <= {
            "status", "payload", "responder"}:
        if payload["status"] == "cancelled":
            return False, None, ""
        return True, payload.get("payload"), "payload.payload"
    return True, payload, "payload"


def json_path(prefix: str, path: Any) -> str:
    """A failing location as `payload.approved` or `payload.items[0]`."""
    out = prefix
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def answer_error(schema: Any, payload: Any) -> tuple[str, str] | None:
    """(param, message) for the first way a resume payload fails the schema, or None when it passes."""
    import jsonschema
    import referencing.exceptions
    from jsonschema import validators
    if schema is None:
        return None
    checked, value, prefix = answer_of(payload)
    if not checked:
        return None
    validator = validators.validator_for(schema)(schema, registry=no_retrieval())
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except (referencing.exceptions.Unresolvable, RecursionError) as exc:
        # Declared schemas are checked for both; this keeps an exotic one a refusal, not a 500.
        return prefix, f"the interrupt's response_schema cannot be evaluated: {type(exc).__name__}"
    if error is None:
        return None
    return json_path(prefix, error.absolute_path), f"the answer does not satisfy the interrupt's " \
        f"response_schema: {error.message}"
