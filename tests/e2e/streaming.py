"""The engine's own token stream, held where a test wants to look: the scripted provider's reply
handed over in the pieces a test names (the first at once, each next one when the test lets it go),
through the engine's real path (`Runner` -> `DeltaStream` -> `Live.fan_out` -> the gateway)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from holdpoint import llm
from holdpoint.llm.call import hand_over
from holdpoint.services.llm_step import LlmSteps


class HeldStream:
    """`llm.STREAMERS["scripted"]` replaced: the reply's text cut at `cuts`, piece k+1 handed over
    once `release(k)` is called (a test calls it when it has seen piece k)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, cuts: list[int]) -> None:
        self.cuts = cuts
        self.gates = [threading.Event() for _ in cuts]
        self.pieces: list[str] = []
        real = llm.STREAMERS["scripted"]

        def held(call: Any, on_delta: Any) -> Any:
            outcome = real(call, lambda text: True)
            content = str((outcome.get("message") or {}).get("content") or "")
            bounds = [0, *cuts, len(content)]
            for k in range(len(bounds) - 1):
                if k:
                    self.gates[k - 1].wait(60)
                piece = content[bounds[k]:bounds[k + 1]]
                self.pieces.append(piece)
                hand_over(on_delta, piece)
            return outcome

        monkeypatch.setitem(llm.STREAMERS, "scripted", held)

    def release(self, k: int) -> None:
        self.gates[k].set()


def no_engine_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine calls the provider whole (for a test that posts deltas of its own)."""
    monkeypatch.setattr(LlmSteps, "delta_stream", lambda self, state, call_id: None)
