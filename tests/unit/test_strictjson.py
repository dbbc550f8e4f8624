"""Strict JSON (holdpoint.core.strictjson); sealed tokens are tests/unit/test_sealer_contract.py's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from holdpoint.core.errors import JsonProblem
from holdpoint.core.strictjson import dumps, loads

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@given(VALUES)
def test_every_json_value_round_trips(value: Any) -> None:
    assert loads(dumps(value)) == value
    assert loads(json.dumps(value)) == value


@pytest.mark.parametrize(("raw", "param", "why"), [
    ('{"a": NaN}', "a", "NaN"),
    ('{"a": [1, Infinity]}', "a[1]", "Infinity"),
    ('{"a": {"b": -Infinity}}', "a.b", "Infinity"),
    ('{"b": 1e999}', "b", "out of range"),
    ('{"b": -1e999}', "b", "out of range"),
    ('{"n": ' + "9" * 4301 + "}", "n", "digits"),
    ('{"x": {"y": 1, "y": 2}}', "x", "duplicate key 'y'"),
    ('{"s": "\\ud800"}', "s", "surrogate"),
    ('{"s": ["ok", "\\udfff tail"]}', "s[1]", "surrogate"),
    ('{"\\udc00": 1}', "", "surrogate"),
    ("NaN", "", "NaN"),
    ("{", "", "not valid JSON"),
])
def test_non_standard_json_is_refused_naming_where(raw: str, param: str, why: str) -> None:
    with pytest.raises(JsonProblem) as refused:
        loads(raw)
    assert refused.value.param == param and why in refused.value.message


def test_the_largest_integer_python_writes_back_is_accepted() -> None:
    assert loads('{"n": ' + "9" * 4300 + "}")["n"] == int("9" * 4300)
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"  # a surrogate pair is one character


def test_dumps_refuses_what_loads_refuses() -> None:
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})
