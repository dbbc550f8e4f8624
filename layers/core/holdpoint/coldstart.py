"""A handler's modules load with the cyclic garbage collector paused, then stay out of its way.

Loading a handler creates hundreds of thousands of objects (pydantic models, Powertools' event
classes, botocore's service models), and each allocation threshold crossed runs a collection that
walks everything loaded so far, none of it garbage: on a cold start that is 10 to 40 ms of pure
overhead (bench/cold_start.py). Inside `loading()` the collector is off; on the way out it is back
on as it was, and the loaded modules are frozen (`gc.freeze`) so later collections, during
requests, skip them too. Nothing changes for code: reference counting still frees what an import
discards, and only garbage *cycles* made while loading (few, and loaded-once) are never collected.

`Deferred` is the other half: what a handler needs only once a request arrives (the API's routes,
the engine's step loop, and the pydantic models of both) is built on the first request, the same
way, instead of at load.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


@contextmanager
def loading() -> Iterator[None]:
    """Wrap a handler's imports and module-level setup (`functions/*/app.py`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


class Deferred(Generic[T]):
    """A value a handler builds on its first request rather than at load (inside `loading()`, once,
    even when the local stack sends its first requests at once), so a cold start's load pays only
    for the handler's frame; the first request pays the rest (bench/README.md (c)). A build
    that raises is tried again by the next request."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    with loading():
                        self._value = self._build()
        return self._value
