"""A bench's FIGURE line: a run that cannot judge its target says so ("not judged"), never NOT MET,
and the line goes to the summary file `make bench` prints last."""

from __future__ import annotations

import importlib
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


def test_soak_spend_verdict_is_judged_on_the_ratios_it_prints() -> None:
    """A soak's spend ratio printed as 1.10x is within 10 %: met whatever the mix (a soak-quick run
    printed ddb_table_wru 107.80 a session over the model's 98.00, 1.10x, and said "not judged": its
    unrounded ratio was just over 1.1)."""
    soak = importlib.import_module("soak")  # bench/ is on sys.path (above)
    ratios = soak.spend_ratios({"ddb_table_wru": 4420 / 41, "sfn_send_task_success": 0.95},
                               {"ddb_table_wru": 98.0, "sfn_send_task_success": 1.0})
    assert ratios == {"ddb_table_wru": 110, "sfn_send_task_success": 95}
    assert soak.spend_verdict(ratios, plain=False) is True and soak.spend_verdict(ratios, plain=True) is True
    assert soak.spend_verdict({"ddb_table_wru": 111}, plain=True) is False
    assert soak.spend_verdict({"ddb_table_wru": 89}, plain=False) is None
