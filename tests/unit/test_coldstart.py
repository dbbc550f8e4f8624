"""`holdpoint.coldstart.loading`: a handler's modules load with the collector paused, which is
then back as it was, with what was loaded frozen out of later collections."""

from __future__ import annotations

import gc

import pytest

from holdpoint.coldstart import loading


@pytest.fixture(autouse=True)
def _restore_gc() -> object:
    was = gc.isenabled()
    yield None
    gc.unfreeze()
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
