"""Numbers read from headers and query strings: exact ASCII digits, nothing else.

Python's `int()` and `str.isdigit()` accept far more than a client should send: `+1`, ` 1`,
`1_000`, superscripts (`"²".isdigit()` is true, `int("²")` fails), Arabic-Indic and fullwidth
digits; pydantic adds `1.0` and surrounding whitespace. Every number the edge reads from text goes
through here, so one rule holds everywhere: 400 naming the field for anything but `[0-9]+`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator

from holdpoint.core.digits import parse_digits
from holdpoint.core.errors import Refusal

__all__ = ["ASCII_DIGITS", "header_number", "parse_digits"]

def header_number(raw: str | None, param: str, maximum: int) -> int | None:
    """A header's non-negative integer (None when absent or empty); 400 naming `param` otherwise."""
    if raw is None or raw == "":
        return None
    value = parse_digits(raw)
    if value is None or value > maximum:
        raise Refusal("validation_error", f"{param} must be a non-negative integer of ASCII digits, at most {maximum}",
                      param)
    return value


def _ascii_digits(value: Any) -> Any:
    """Before pydantic's own int parsing: a query string value must be ASCII digits only."""
    if isinstance(value, str) and parse_digits(value) is None:
        raise ValueError("must be a non-negative integer of ASCII digits")
    return value


ASCII_DIGITS = BeforeValidator(_ascii_digits)
"""Metadata for an `int` query parameter: `Annotated[int, Query(ge=.., le=..), ASCII_DIGITS]`."""
