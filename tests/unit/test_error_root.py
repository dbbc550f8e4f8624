"""One error root: every error class Holdpoint's own code defines derives from
`core.errors.HoldpointError` (at the bottom of the dependency chain), and each name is one class."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import holdpoint
from holdpoint.core.errors import HoldpointError

SKIPPED = ("holdpoint.http.handlers",)
"""Entry points that build their adapters on import (they read the deployment's environment)."""


def error_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(holdpoint.__path__, "holdpoint."):
        if info.name.startswith(SKIPPED):
            continue
        module = importlib.import_module(info.name)
        found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                  if issubclass(c, BaseException) and c.__module__ == module.__name__]
    return found


def test_every_error_holdpoint_defines_derives_from_its_root() -> None:
    classes = error_classes()
    assert len(classes) > 30
    assert [c.__qualname__ for c in classes if not issubclass(c, HoldpointError)] == []


def test_each_error_name_is_one_class() -> None:
    by_name: dict[str, set[str]] = defaultdict(set)
    for c in error_classes():
        by_name[c.__qualname__].add(c.__module__)
    assert {n: m for n, m in by_name.items() if len(m) > 1} == {}
