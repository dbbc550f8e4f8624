"""Tenant JSON Schemas: response schemas (A1) and tool `input`/`output` schemas. Every evaluation of
a schema a tenant wrote goes through this module, which bounds it: references resolve inside the
schema or not at all (nothing is ever retrieved), regexes run on RE2 (linear time), and a count of
steps stops an evaluation past `MAX_STEPS` (docs/SECURITY.md, "Tenant schemas"). A schema is
checked where it is declared, and a value where it is given, so a bad answer is refused before
anything is recorded or a task token is spent. The bounded keywords themselves are
`core.schema_keywords`, loaded with the first evaluation or declaration."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from holdpoint.core.errors import TooMuchWork, Unsupported
from holdpoint.core.schema_budget import BYTES_PER_STEP as BYTES_PER_STEP
from holdpoint.core.schema_budget import MAX_STEPS as MAX_STEPS
from holdpoint.core.schema_budget import UNSUPPORTED as UNSUPPORTED

if TYPE_CHECKING:
    from holdpoint.core.schema_keywords import Meter

PROBES: tuple[Any, ...] = (None, True, 0, "", [], {})  # one instance of each JSON type
MAX_SCHEMA_BYTES = 16_384  # stored on the interrupt item and read on every resume
MAX_MESSAGE = 1_000  # characters of a failure message (it quotes the value) returned to a caller
_NOT_KEYWORDS = frozenset({"enum", "const", "default", "examples"})  # their values are data, not schemas


@dataclass(frozen=True)
class Failure:
    """How a value fails a schema: where, and why. `judged` is False when the schema could not
    judge the value within its bounds (too much work, an unresolvable reference)."""

    path: tuple[str | int, ...]
    message: str
    judged: bool = True


def _keywords(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) in a schema, outside the values that are data (`enum`, `const`, ...)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            if key not in _NOT_KEYWORDS:
                yield from _keywords(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keywords(item)


def _declared_error(schema: Any) -> str | None:
    """A regex RE2 cannot run, or a keyword whose evaluation cannot be bounded."""
    from holdpoint.core.schema_keywords import regex_error

    for key, value in _keywords(schema):
        if key in UNSUPPORTED:
            return f"uses {key}, which is not supported (its evaluation is quadratic in the value)"
        patterns = [value] if key == "pattern" else list(value) if key == "patternProperties" else []
        for pattern in patterns:
            if isinstance(pattern, str) and (error := regex_error(pattern)):
                return error
    return None


def evaluate(schema: Any, value: Any) -> Failure | None:
    """How `value` fails `schema` (a tenant's), or None when it passes; never more than MAX_STEPS
    of work, never a retrieval, never an exception for what the schema or the value hold."""
    import re2
    import referencing.exceptions

    from holdpoint.core import schema_keywords as kw

    try:
        error = kw.best(schema, value, kw.Meter())
    except TooMuchWork:
        return Failure((), f"does more than {MAX_STEPS} steps of work on this value", judged=False)
    except Unsupported:
        return Failure((), f"cannot be evaluated: it uses {' or '.join(sorted(UNSUPPORTED))}", judged=False)
    except (referencing.exceptions.Unresolvable, RecursionError, re2.error) as exc:
        # Declared schemas are checked for each; this keeps one stored before a check a refusal, not a 500.
        return Failure((), f"cannot be evaluated: {type(exc).__name__}", judged=False)
    if error is None:
        return None
    message, half = error.message, MAX_MESSAGE // 2
    if len(message) > MAX_MESSAGE:  # the middle of the quoted value goes; what is wrong with it stays
        message = f"{message[:half]} ... {message[-half:]}"
    return Failure(tuple(error.absolute_path), message)


# --- declaration ---------------------------------------------------------------------------------


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


def schema_size(schema: Any) -> int:
    """Bytes as stored (compact JSON), the measure MAX_SCHEMA_BYTES caps."""
    return len(json.dumps(schema, separators=(",", ":")))


def schema_error(schema: Any, meter: Meter | None = None) -> str | None:
    """Why `schema` may not be declared, or None: it must be a JSON Schema (object or boolean, valid
    under its own metaschema) of at most MAX_SCHEMA_BYTES, referring only inside itself, with regexes
    RE2 runs, and doing at most MAX_STEPS of work on sample values (`meter`: a budget shared by
    several schemas declared at once)."""
    import jsonschema
    from jsonschema import validators

    from holdpoint.core import schema_keywords as kw
    if not isinstance(schema, (dict, bool)):
        return "must be a JSON Schema (an object or a boolean)"
    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        return "is not a valid JSON Schema: $schema must be a string"
    if schema_size(schema) > MAX_SCHEMA_BYTES:
        return f"is over {MAX_SCHEMA_BYTES} bytes as stored"
    refs = list(_refs(schema))
    if any(not ref.startswith("#") for ref in refs):
        return "may only use references inside itself ($ref starting with #)"
    if error := _declared_error(schema):
        return error
    validator = validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"is not a valid JSON Schema: {exc.message}"
    return _dangling(schema, validator.META_SCHEMA.get("$schema", ""), refs) or _work(schema, meter or kw.Meter())


def _work(schema: Any, meter: Meter) -> str | None:
    """Tried on one instance of each JSON type: a schema that refers to itself without end
    (`{"$ref": "#"}`) or does more than its budget of work is refused now, not at every use."""
    from holdpoint.core import schema_keywords as kw

    try:
        for probe in PROBES:
            kw.best(schema, probe, meter)
    except RecursionError:
        return "refers to itself without end"
    except TooMuchWork:
        return f"does more than {MAX_STEPS} steps of work on sample values"
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


def tools_error(tools: Any) -> tuple[str, str] | None:
    """(param, message) for the first tool `input` or `output` schema that may not be declared, the
    schemas of one agent sharing one work budget; None when all may."""
    from holdpoint.core import schema_keywords as kw

    meter = kw.Meter()
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        for field in ("input", "output"):
            schema = tool.get(field) if isinstance(tool, dict) else None
            if schema is not None and (error := schema_error(schema, meter)):
                return f"tools[{i}].{field}", f"tools[{i}].{field} {error}"
    return None


# --- response schemas (A1) -----------------------------------------------------------------------


def declared(response_schema: Any, payload: Any) -> Any:
    """The interrupt's schema: the explicit field, else AG-UI's `payload.responseSchema`."""
    if response_schema is not None:
        return response_schema
    if isinstance(payload, dict):
        return payload.get("responseSchema")
    return None


def json_path(prefix: str, path: Any) -> str:
    """A failing location as `payload.approved` or `payload.items[0]`."""
    out = prefix
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def answer_error(schema: Any, value: Any, prefix: str = "payload") -> tuple[str, str] | None:
    """(param, message) for the first way an answer (as `answers.given` reads it, at `prefix` in
    what was sent) fails the schema, or None when it passes."""
    if schema is None:
        return None
    failure = evaluate(schema, value)
    if failure is None:
        return None
    if not failure.judged:
        return prefix, f"the interrupt's response_schema {failure.message}"
    return json_path(prefix, failure.path), f"the answer does not satisfy the interrupt's " \
        f"response_schema: {failure.message}"
