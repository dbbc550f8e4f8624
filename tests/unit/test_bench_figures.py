"""A bench's FIGURE line: a run that cannot judge its target says so ("not judged"), never NOT MET,
and the line goes to the summary file `make bench` prints last."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from figures import SUMMARY_ENV, figure  # noqa: E402


@pytest.mark.parametrize(("met", "verdict"), [(True, "met"), (False, "NOT MET"), (None, "not judged")])
def test_bench_a_figure_says_met_not_met_or_not_judged(met: bool | None, verdict: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "figures.txt"
    monkeypatch.setenv(SUMMARY_ENV, str(summary))
    line = figure("x", "1.0x", "below 2x", met)
    assert line.endswith(f"target below 2x: {verdict}") and summary.read_text() == line + "\n"
