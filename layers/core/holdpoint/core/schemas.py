"""Tenant JSON Schemas: response schemas (A1) and tool `input`/`output` schemas. Every evaluation of
a schema a tenant wrote goes through this module, which bounds it: references resolve inside the
schema or not at all (nothing is ever retrieved), regexes run on RE2 (linear time), and a count of
steps stops an evaluation past `MAX_STEPS` (docs/SECURITY.md, "Tenant schemas"). A schema is
checked where it is declared, and a value where it is given, so a bad answer is refused before
anything is recorded or a task token is spent."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

AGUI_STATUSES = frozenset({"resolved", "cancelled"})
PROBES: tuple[Any, ...] = (None, True, 0, "", [], {})  # one instance of each JSON type
MAX_SCHEMA_BYTES = 16_384  # stored on the interrupt item and read on every resume
MAX_STEPS = 100_000  # keyword evaluations (weighted by size) one evaluation, or one declaration, may do
BYTES_PER_STEP = 64  # a string (regexed, or an error message built) costs a step per this many bytes
MAX_MESSAGE = 1_000  # characters of a failure message (it quotes the value) returned to a caller
UNSUPPORTED = frozenset({"unevaluatedProperties", "unevaluatedItems"})  # jsonschema's are quadratic
_NOT_KEYWORDS = frozenset({"enum", "const", "default", "examples"})  # their values are data, not schemas


class TooMuchWork(Exception):
    """An evaluation went past its step budget."""


class Unsupported(Exception):
    """The schema uses a keyword this module does not evaluate (`UNSUPPORTED`)."""


class _Meter:
    """The steps an evaluation (or a declaration's probes) may still spend."""

    __slots__ = ("left", "_identities")

    def __init__(self, steps: int = MAX_STEPS) -> None:
        self.left = steps
        self._identities: dict[tuple[int, str], frozenset[Any]] = {}

    def identities(self, schema: Any, keyword: str, values: list[Any]) -> frozenset[Any]:
        """The identities of a (sub)schema's `enum` (or `const`) values, worked out once per
        evaluation; keyed by the subschema's id, which lives as long as the evaluated schema."""
        key = (id(schema), keyword)
        if key not in self._identities:
            self._identities[key] = frozenset(_identity_of(value) for value in values)
        return self._identities[key]

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise TooMuchWork


_METER: ContextVar[_Meter] = ContextVar("schema_meter")


@dataclass(frozen=True)
class Failure:
    """How a value fails a schema: where, and why. `judged` is False when the schema could not
    judge the value within its bounds (too much work, an unresolvable reference)."""

    path: tuple[str | int, ...]
    message: str
    judged: bool = True


@cache
def no_retrieval() -> Any:
    """An empty registry: a `$ref` resolves inside the schema or not at all (jsonschema would
    otherwise fetch remote references over the network). jsonschema and referencing load here,
    on first use: only schemas need them."""
    import referencing

    return referencing.Registry()


# --- regexes: RE2, linear in the text ------------------------------------------------------------


@lru_cache(maxsize=1_024)
def _regex(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is answered to the tenant, not logged to stderr
    options.never_capture = True  # only whether it matches is asked
    return re2.compile(pattern, options)


def regex_error(pattern: str) -> str | None:
    """Why RE2 cannot run `pattern` (backreferences, lookaround, ...), or None."""
    import re2

    try:
        _regex(pattern)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return f"has a pattern RE2 cannot run ({why}): {pattern[:200]!r}"
    return None


def _search(pattern: str, text: str) -> Any:
    return _regex(pattern).search(text)


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
    for key, value in _keywords(schema):
        if key in UNSUPPORTED:
            return f"uses {key}, which is not supported (its evaluation is quadratic in the value)"
        patterns = [value] if key == "pattern" else list(value) if key == "patternProperties" else []
        for pattern in patterns:
            if isinstance(pattern, str) and (error := regex_error(pattern)):
                return error
    return None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """The keys neither `properties` nor a `patternProperties` regex covers (matched with RE2)."""
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named, patterns = schema.get("properties") or {}, list(schema.get("patternProperties") or {})
    extras = sorted(key for key in instance
                    if key not in named and not any(_search(pattern, key) for pattern in patterns))
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, extras))} "
                              f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def _unsupported(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Refused at declaration; a schema stored before is a refusal to judge, never quadratic work."""
    raise Unsupported
    yield  # a generator, like every keyword


# --- bounded keywords ----------------------------------------------------------------------------


def _size(value: Any) -> int:
    """What a keyword's value costs to walk: its entries, or a step per BYTES_PER_STEP of a string."""
    if isinstance(value, (list, dict)):
        return len(value)
    if isinstance(value, str):
        return len(value) // BYTES_PER_STEP
    return 0


def _scan(name: str, value: Any, instance: Any, schema: Any) -> int:
    """What the keywords that look through the instance itself (rather than descending into its
    parts, which are charged as they are evaluated) cost on top: regexes over the text or the keys."""
    if name == "pattern" and isinstance(instance, str):
        return len(instance) // BYTES_PER_STEP
    if isinstance(instance, dict) and name == "patternProperties":
        return len(instance) * _size(value)
    if isinstance(instance, dict) and name == "additionalProperties":
        return len(instance) * (1 + _size(schema.get("patternProperties")))
    return 0


def _exact(number: Any) -> Fraction | None:
    """A JSON number as the exact decimal it was written as (`0.1` is 1/10), or None if not finite."""
    if isinstance(number, int):
        return Fraction(number)
    if isinstance(number, float) and math.isfinite(number):
        return Fraction(repr(number))
    return None


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Exact and overflow-free: jsonschema divides floats, which overflows on a long integer."""
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "number"):
        return
    value, step = _exact(instance), _exact(divisor)
    if value is None or not step or value % step != 0:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _identity(value: Any, nodes: list[int]) -> Any:
    """A hashable stand-in equal for JSON-equal values (`1` and `1.0` equal, `true` and `1` not,
    objects whatever their key order); counts the nodes it visits."""
    nodes[0] += 1
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_identity(item, nodes) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _identity(item, nodes)) for key, item in value.items()))
    return ("string", value)


def _identity_of(value: Any) -> Any:
    """`_identity` of `value`, its nodes charged to the evaluation."""
    nodes = [0]
    identity = _identity(value, nodes)
    _METER.get().spend(nodes[0])
    return identity


def _enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Linear: the instance's identity against the entries' (jsonschema compares the instance with
    each entry in turn, each comparison as long as the two values)."""
    from jsonschema.exceptions import ValidationError

    if not isinstance(enums, list) or _identity_of(instance) not in _METER.get().identities(schema, "enum", enums):
        yield ValidationError(f"{instance!r} is not one of {enums!r}")


def _const(validator: Any, const: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if _identity_of(instance) not in _METER.get().identities(schema, "const", [const]):
        yield ValidationError(f"{const!r} was expected")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Linear in the array's size: jsonschema compares items pairwise when they do not sort."""
    from jsonschema.exceptions import ValidationError

    if not unique or not validator.is_type(instance, "array"):
        return
    seen = {_identity_of(item) for item in instance}
    if len(seen) != len(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


Keyword = Callable[[Any, Any, Any, Any], Iterable[Any] | None]
_REPLACED: dict[str, Keyword] = {
    "multipleOf": _multiple_of, "uniqueItems": _unique_items, "enum": _enum, "const": _const, "pattern": _pattern,
    "patternProperties": _pattern_properties, "additionalProperties": _additional_properties,
    **{name: _unsupported for name in UNSUPPORTED}}
_LOOKUPS = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})
LOOKUP_STEPS = 4  # resolving a reference costs about this many plain keywords (bench/schema_work.py)


def _metered(name: str, keyword: Keyword) -> Keyword:
    """Charge each keyword evaluation to the evaluation's meter: one step (more for a reference),
    plus the size of the keyword's value and of what it scans, plus the bytes of each failure it
    reports (its message quotes the value)."""
    base = 1 + (LOOKUP_STEPS if name in _LOOKUPS else 0)

    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        meter = _METER.get()
        meter.spend(base + _size(value) + _scan(name, value, instance, schema))
        for error in keyword(validator, value, instance, schema) or ():
            meter.spend(len(error.message) // BYTES_PER_STEP)
            yield error

    return run


@cache
def _bounded(cls: Any) -> Any:
    """`cls` (a dialect's validator) with every keyword metered and the super-linear ones replaced:
    every regex jsonschema would run with Python's backtracking `re` runs on RE2 here."""
    from jsonschema import validators

    keywords = {name: _metered(name, _REPLACED.get(name, fn)) for name, fn in cls.VALIDATORS.items()}
    return validators.extend(cls, keywords)


def _validator(schema: Any) -> Any:
    from jsonschema import validators

    return _bounded(validators.validator_for(schema))(schema, registry=no_retrieval())


def _best(schema: Any, value: Any, meter: _Meter) -> Any:
    """jsonschema's most relevant error of `value` against `schema`, spending from `meter`."""
    from jsonschema.exceptions import best_match

    token = _METER.set(meter)
    try:
        return best_match(_validator(schema).iter_errors(value))
    finally:
        _METER.reset(token)


def evaluate(schema: Any, value: Any) -> Failure | None:
    """How `value` fails `schema` (a tenant's), or None when it passes; never more than MAX_STEPS
    of work, never a retrieval, never an exception for what the schema or the value hold."""
    import re2
    import referencing.exceptions

    try:
        error = _best(schema, value, _Meter())
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


def schema_error(schema: Any, meter: _Meter | None = None) -> str | None:
    """Why `schema` may not be declared, or None: it must be a JSON Schema (object or boolean, valid
    under its own metaschema) of at most MAX_SCHEMA_BYTES, referring only inside itself, with regexes
    RE2 runs, and doing at most MAX_STEPS of work on sample values (`meter`: a budget shared by
    several schemas declared at once)."""
    import jsonschema
    from jsonschema import validators
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
    return _dangling(schema, validator.META_SCHEMA.get("$schema", ""), refs) or _work(schema, meter or _Meter())


def _work(schema: Any, meter: _Meter) -> str | None:
    """Tried on one instance of each JSON type: a schema that refers to itself without end
    (`{"$ref": "#"}`) or does more than its budget of work is refused now, not at every use."""
    try:
        for probe in PROBES:
            _best(schema, probe, meter)
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
    meter = _Meter()
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
    if schema is None:
        return None
    checked, value, prefix = answer_of(payload)
    if not checked:
        return None
    failure = evaluate(schema, value)
    if failure is None:
        return None
    if not failure.judged:
        return prefix, f"the interrupt's response_schema {failure.message}"
    return json_path(prefix, failure.path), f"the answer does not satisfy the interrupt's " \
        f"response_schema: {failure.message}"
