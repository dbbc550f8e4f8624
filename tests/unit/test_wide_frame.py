"""The tests run on tests/conftest.py's wide frame (one 2 MiB chunk of CPython's call stack), so
no hot loop maps and unmaps a 16 KiB chunk per call under pytest-xdist (about 15 s of system time)."""

from __future__ import annotations

import sys

from tests import conftest


def test_wide_frame_a_test_runs_on_it() -> None:
    frame, codes = sys._getframe(), []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    wide = conftest._on_a_wide_frame.__code__
    assert wide in codes
    assert wide.co_stacksize >= 1 << 17  # 1 MiB of slots: a chunk of its own, with 1 MiB left above it
