"""The worst work a tenant's JSON Schema can make one evaluation do, within the limits
(docs/SECURITY.md, "Tenant schemas"): each hostile schema's time next to a trivial schema's, as a
ratio, with the steps it was charged. Run: `.venv/bin/python bench/schema_work.py`.

Values are the largest a caller can send (a resume body is at most 1 MiB); schemas the largest
that can be declared (16 KiB). A case that stops at the budget shows `MAX_STEPS+`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import _common  # noqa: F401  (puts layers/core on sys.path)

from holdpoint.core import schemas

PAYLOAD = 1_000_000  # characters of the largest value a resume body carries


def chain(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    """`$defs` d0..d{depth}, each `anyOf` pointing twice at the next: 2^depth paths."""
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(depth)}
    defs[f"d{depth}"] = leaf
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def nested(depth: int) -> tuple[dict[str, Any], Any]:
    """`anyOf` twice over a schema whose property holds the same schema: 2^(instance depth) paths."""
    schema = {"$defs": {"s": {"anyOf": [{"$ref": "#/$defs/a"}] * 2}, "a": {
        "type": "object", "properties": {"x": {"$ref": "#/$defs/s"}}, "required": ["y"]}}, "$ref": "#/$defs/s"}
    value: Any = {}
    for _ in range(depth):
        value = {"x": value}
    return schema, value


def fit(schema_of: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    """The largest schema of the family that is still under the size cap."""
    n = 1
    while schemas.schema_size(schema_of(n * 2)) <= schemas.MAX_SCHEMA_BYTES:
        n *= 2
    step = n // 2
    while step:
        if schemas.schema_size(schema_of(n + step)) <= schemas.MAX_SCHEMA_BYTES:
            n += step
        step //= 2
    return schema_of(n)


def cases() -> list[tuple[str, Callable[[], Any]]]:
    big_text = "a" * (PAYLOAD - 1) + "!"
    many_keys = {f"k{i}": 0 for i in range(PAYLOAD // 12)}
    objects = [{"i": i} for i in range(PAYLOAD // 10)]
    numbers = list(range(PAYLOAD // 8))
    wide = {f"k{i}": "v" * 10 for i in range(PAYLOAD // 20)}
    long_int = int("9" * 4_300)
    enum_entries = fit(lambda n: {"items": {"enum": [[1] * 39 + [j] for j in range(n)]}})
    near_miss = [[1] * 39 + [-1]] * (PAYLOAD // 90)
    patterns = fit(lambda n: {"patternProperties": {f"^k{j}x+$": {} for j in range(n)}})
    strings = fit(lambda n: {"anyOf": [{"pattern": f"^(a+)+{j}$"} for j in range(n)]})
    types = fit(lambda n: {"anyOf": [{"type": "string"}] * n})
    deep_schema, deep_value = nested(60)
    return [
        ("trivial {type: object} on {a: 1}", lambda: schemas.evaluate({"type": "object"}, {"a": 1})),
        ("anyOf chain x60, declared", lambda: schemas.schema_error(chain(60, {"type": "integer"}))),
        ("anyOf chain x60 on a string", lambda: schemas.evaluate(chain(60, {"type": "integer"}), "x")),
        ("anyOf over a 60-deep object", lambda: schemas.evaluate(deep_schema, deep_value)),
        ("pattern ^(a+)+$ on 1 MB", lambda: schemas.evaluate({"pattern": "^(a+)+$"}, big_text)),
        ("16 KiB of anyOf patterns on 1 MB", lambda: schemas.evaluate(strings, big_text)),
        ("16 KiB of patternProperties, 83k keys", lambda: schemas.evaluate(patterns, many_keys)),
        ("uniqueItems, 100k objects", lambda: schemas.evaluate({"uniqueItems": True}, objects)),
        ("uniqueItems, 125k integers", lambda: schemas.evaluate({"uniqueItems": True}, numbers)),
        ("multipleOf 1e-300 on a 4300-digit integer", lambda: schemas.evaluate({"multipleOf": 1e-300}, long_int)),
        ("multipleOf 0.5 on a 400-digit integer", lambda: schemas.evaluate({"multipleOf": 0.5}, 10**400 + 1)),
        ("16 KiB enum of arrays, 11k near misses", lambda: schemas.evaluate(enum_entries, near_miss)),
        ("16 KiB anyOf of types on a 1 MB object", lambda: schemas.evaluate(types, wide)),
        ("additionalProperties + 16 KiB of patterns, 83k keys",
         lambda: schemas.evaluate({**patterns, "additionalProperties": False}, many_keys)),
        ("items: integer on 125k integers", lambda: schemas.evaluate({"items": {"type": "integer"}}, numbers)),
    ]


def timed(run: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    schemas.evaluate({"type": "object"}, {})  # load jsonschema, referencing and RE2 first
    rows = [(name, timed(run), run()) for name, run in cases()]
    base = rows[0][1]
    print(f"budget: {schemas.MAX_STEPS} steps; schema cap {schemas.MAX_SCHEMA_BYTES} bytes")
    print(f"{'case':52} {'seconds':>9} {'x trivial':>11}  outcome")
    for name, seconds, outcome in rows:
        said = "passes" if outcome is None else outcome if isinstance(outcome, str) else outcome.message
        print(f"{name:52} {seconds:9.4f} {seconds / base:11.0f}  {said[:70]}")


if __name__ == "__main__":
    main()
