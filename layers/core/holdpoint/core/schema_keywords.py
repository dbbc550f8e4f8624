"""jsonschema's keywords, bounded, for `core.schemas`: each keyword evaluation is charged to a meter
(`MAX_STEPS` an evaluation), and the keywords jsonschema runs in super-linear time are replaced:
regexes on RE2 (linear in the text), `multipleOf` exact, `enum`, `const` and `uniqueItems` linear
in the value. Loaded with the first evaluation or declaration, as jsonschema itself is."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

from holdpoint.core.errors import TooMuchWork, Unsupported
from holdpoint.core.schema_budget import BYTES_PER_STEP, MAX_STEPS, UNSUPPORTED


class Meter:
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


_METER: ContextVar[Meter] = ContextVar("schema_meter")


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


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, object], instance: Any, schema: Any) -> Iterator[Any]:
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


@cache
def no_retrieval() -> Any:
    """An empty registry: a `$ref` resolves inside the schema or not at all (jsonschema would
    otherwise fetch remote references over the network). jsonschema and referencing load here,
    on first use: only schemas need them."""
    import referencing

    return referencing.Registry()


def _validator(schema: Any) -> Any:
    from jsonschema import validators

    return _bounded(validators.validator_for(schema))(schema, registry=no_retrieval())


def best(schema: Any, value: Any, meter: Meter) -> Any:
    """jsonschema's most relevant error of `value` against `schema`, spending from `meter`."""
    from jsonschema.exceptions import best_match

    token = _METER.set(meter)
    try:
        return best_match(_validator(schema).iter_errors(value))
    finally:
        _METER.reset(token)
