"""The cost bench's three ways of pricing reads (bench/README.md (a) and (e)): `cold` (every
load reads the whole session), `cold-container` (every Lambda invocation on a new container: its
first load reads the whole session, later ones only the head and what changed) and `warm`. The
figures are measured on the real store against moto, so these tests check the measurement itself."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from holdpoint.core import engine

BENCH = Path(__file__).resolve().parents[2] / "bench"
N = 10
HEAD_ITEMS = 3  # a head load's items: the header, the agent item and the scenario's one interrupt


def bench_module(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, dict[str, Any]]]:
    """The bench's scenario at N nodes in each reads mode (the Rig wraps `engine.next_work`: put it back)."""
    ddb_per_step = bench_module("ddb_per_step")
    original = engine.next_work
    try:
        yield {mode: ddb_per_step.measure([N], "seeded", reads=mode)[0] for mode in ddb_per_step.READS}
    finally:
        engine.next_work = original


def phases(run: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [step for phase in ("plain_turn", "interrupt_turn", "park", "resume_api", "wake") for step in run[phase]]


def invocations(run: dict[str, Any]) -> list[list[tuple[str, dict[str, Any]]]]:
    """The scenario's Lambda invocations that load the whole session, in order: each API submit, the
    engine run its kick starts, the wake message (the park message reads nothing, the resume one item)."""
    out = []
    for phase in ("plain_turn", "interrupt_turn"):
        submit, *engine_run = run[phase]
        out += [[submit], engine_run]
    return [*out, run["wake"]]


def test_cold_container_reads_fall_between_warm_and_cold(runs: dict[str, dict[str, Any]]) -> None:
    read = {mode: sum(t["ddb_read_bytes"] for _, t in phases(run)) for mode, run in runs.items()}
    assert read["warm"] < read["cold-container"] < read["cold"], read
    cost_model = bench_module("cost_model")
    args = cost_model_args(cost_model)
    rru = {mode: cost_model.marginal(run, args)["dynamodb reads (RRU)"][0] for mode, run in runs.items()}
    assert rru["warm"] < rru["cold-container"] < rru["cold"], rru


def test_cold_container_invocation_reads_the_session_once_then_only_the_head(
        runs: dict[str, dict[str, Any]]) -> None:
    """A new container's first load reads the whole session; every later load in the same invocation,
    right after that invocation's own commit, reads the head alone (header, agent item, interrupts)."""
    run = runs["cold-container"]
    for invocation in invocations(run):
        (first_label, first), *later = invocation
        assert first["ddb_items_read"] > run["nodes_at_start"], first_label
        for label, t in later:
            assert set(t["requests"]) & {"dynamodb:BatchGetItem", "dynamodb:GetItem"} == set(), label
            assert t["ddb_read_requests"] == 1 and t["ddb_items_read"] <= HEAD_ITEMS, (label, t)


def test_cold_reads_the_whole_session_at_every_load_and_warm_never(runs: dict[str, dict[str, Any]]) -> None:
    """The two bounds around cold-container: cold reads everything after its own commit too; a warm
    container that has served the session reads the whole session at no point of the scenario."""
    for invocation in invocations(runs["cold"]):
        for label, t in invocation:
            assert t["ddb_items_read"] > runs["cold"]["nodes_at_start"], label
    for label, t in phases(runs["warm"]):
        assert t["ddb_items_read"] < runs["warm"]["nodes_at_start"], label


def cost_model_args(cost_model: ModuleType) -> Any:
    """cost_model.py's defaults, as its command line parses them with no flags."""
    return cost_model.parser().parse_args([])


def test_cost_model_prices_cold_container_reads_by_default_and_every_mode_side_by_side(
        runs: dict[str, dict[str, Any]]) -> None:
    cost_model = bench_module("cost_model")
    args = cost_model_args(cost_model)
    assert args.reads == "cold-container"
    assert set(cost_model.READS_KEYS) == set(bench_module("ddb_per_step").READS)
    text = cost_model.by_reads({mode: [runs[mode]] for mode in cost_model.READS_KEYS}, args)
    for mode, run in runs.items():
        assert f"| {mode}" in text and f"${cost_model.total(run, args):,.2f}" in text
    assert f"x of ${cost_model.TARGETS[N]:.0f})" in text
