"""How a contract test's fixture picks its side (`tests/unit/test_*_contract.py`): the in-memory
twin, or the AWS adapter built inside moto's in-process AWS (the `aws` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def side(request: pytest.FixtureRequest, memory: Callable[[], T], aws: Callable[[], T]) -> T:
    """`memory()` for the fixture's "memory" param; for any other, `aws()` once moto is up."""
    if request.param == "memory":
        return memory()
    request.getfixturevalue("aws")
    return aws()
