"""`holdpoint.coldstart.loading`: a handler's modules load with the collector paused, which is
then back as it was, with what was loaded frozen out of later collections."""

from __future__ import annotations

import gc
import threading

import pytest

from holdpoint.coldstart import Deferred, loading


@pytest.fixture(autouse=True)
def _restore_gc() -> object:
    """Nothing frozen when a test starts (so `get_freeze_count` counts what `loading()` froze), and
    the run's freeze (tests/conftest.py) back after it."""
    was, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.unfreeze()
    yield None
    gc.unfreeze()
    if frozen:
        gc.freeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_while_loading_and_back_after() -> None:
    gc.enable()
    with loading():
        assert not gc.isenabled()
        made = [object() for _ in range(10)]
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what was loaded is out of later collections
    assert len(made) == 10


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with loading():
        pass
    assert not gc.isenabled()


def test_a_failing_import_still_gives_the_collector_back() -> None:
    gc.enable()
    with pytest.raises(ImportError), loading():
        import holdpoint.no_such_module  # type: ignore[import-not-found]  # noqa: F401, PLC0415
    assert gc.isenabled()


def test_deferred_builds_on_first_use_once_with_the_collector_paused() -> None:
    gc.enable()
    built: list[bool] = []

    def build() -> dict[str, int]:
        built.append(gc.isenabled())
        return {"routes": 1}

    deferred = Deferred(build)
    assert built == []  # nothing at creation: the load does not pay for it
    first = deferred.get()
    assert deferred.get() is first and built == [False]  # once, inside loading()
    assert gc.isenabled()


def test_deferred_first_requests_at_once_build_once() -> None:
    started = threading.Event()
    release = threading.Event()
    calls: list[int] = []

    def build() -> object:
        calls.append(1)
        started.set()
        release.wait(5)
        return object()

    deferred = Deferred(build)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(deferred.get())) for _ in range(4)]
    for t in threads:
        t.start()
    assert started.wait(5)
    release.set()
    for t in threads:
        t.join(5)
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)


def test_a_failing_deferred_build_is_tried_again_by_the_next_request() -> None:
    gc.enable()
    attempts: list[int] = []

    def build() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("secret store down")
        return "built"

    deferred = Deferred(build)
    with pytest.raises(RuntimeError):
        deferred.get()
    assert gc.isenabled()
    assert deferred.get() == "built" and len(attempts) == 2
