"""A handler's modules load with the cyclic garbage collector paused, then stay out of its way.

Loading a handler creates hundreds of thousands of objects (pydantic models, Powertools' event
classes, botocore's service models), and each allocation threshold crossed runs a collection that
walks everything loaded so far, none of it garbage: on a cold start that is 10 to 40 ms of pure
overhead (bench/cold_start.py). Inside `loading()` the collector is off; on the way out it is back
on as it was, and the loaded modules are frozen (`gc.freeze`) so later collections, during
requests, skip them too. Nothing changes for code: reference counting still frees what an import
discards, and only garbage *cycles* made while loading (few, and loaded-once) are never collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
