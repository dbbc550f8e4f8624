"""JSON exactly as RFC 8259 defines it, parsed without surprises.

Python's parser is lenient where the API must not be: it accepts `NaN`, `Infinity` and `1e999`
(stored as values no client can parse back), keeps the last of duplicate keys (so two readers of
one body can disagree on what it says), lets lone surrogates such as `"\\ud800"` into strings (which
no UTF-8 encoder writes back), and raises a bare ValueError on integers of more than 4,300 digits.
`loads` refuses all of these with a `JsonProblem` that names where in the document it was.
"""

from __future__ import annotations

import json
import math
from typing import Any

from holdpoint.core.errors import JsonProblem

MAX_INT_DIGITS = 4_300  # Python's own int<->str conversion limit, so whatever parses also serialises


class _Refused:
    """Stands where a refused value was, so the walk below can say where."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number")


def _float(text: str) -> float | _Refused:
    value = float(text)
    return value if math.isfinite(value) else _Refused(f"number {text[:20]} is out of range")


def _int(text: str) -> int | _Refused:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return _Refused(f"integer has more than {MAX_INT_DIGITS} digits")
    return int(text)


def _object(pairs: list[tuple[str, object]]) -> dict[str, object] | _Refused:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return _Refused(f"duplicate key {key[:40]!r}")
        seen.add(key)
    return dict(pairs)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first refused value in a parsed document, as (path, why), or None."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, _Refused):
            return where, item.why
        if isinstance(item, str) and not _utf8(item):
            return where, "string holds a lone surrogate (not valid Unicode)"
        if isinstance(item, dict):
            for key in reversed(list(item)):
                if not _utf8(key):
                    return where, "key holds a lone surrogate (not valid Unicode)"
                stack.append((_join(where, key), item[key]))
        elif isinstance(item, list):
            stack.extend((_join(where, i), v) for i, v in reversed(list(enumerate(item))))
    return None


def loads(raw: bytes | str) -> Any:
    """Parse strictly; raises JsonProblem (param "" when the text is not JSON at all)."""
    try:
        value = json.loads(raw, parse_constant=_constant, parse_float=_float, parse_int=_int,
                           object_pairs_hook=_object)
    except (ValueError, RecursionError) as exc:
        raise JsonProblem("", f"not valid JSON: {str(exc)[:120]}") from None
    found = problem(value)
    if found is not None:
        raise JsonProblem(*found)
    return value


def dumps(value: Any) -> str:
    """Compact JSON that refuses NaN and infinities instead of writing them."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)
