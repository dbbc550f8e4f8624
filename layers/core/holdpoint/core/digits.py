"""Numbers spelled in text by a caller (headers, query strings, Slack's request timestamp): exact
ASCII digits only. `int()` and `str.isdigit()` accept signs, spaces, underscores, superscripts and
other scripts' digits (`"²".isdigit()` is true and `int("²")` fails), so every such parse is here."""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"[0-9]{1,19}")
_HEX = re.compile(r"[0-9A-Fa-f]{1,16}")


def parse_digits(raw: object, *, hexadecimal: bool = False) -> int | None:
    """The number `raw` spells in ASCII digits only (hex digits with `hexadecimal`), else None."""
    if not isinstance(raw, str) or not (_HEX if hexadecimal else _DECIMAL).fullmatch(raw):
        return None
    return int(raw, 16 if hexadecimal else 10)
