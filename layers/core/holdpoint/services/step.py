"""What the engine's step services share: the store, what a run did (`Counters`, for metrics and
tests) and the clock."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from holdpoint.ports import Clock, SessionStore


@dataclass
class Counters:
    """Counts and timings by name."""

    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + value

    def time(self, name: str, millis: float) -> None:
        self.timings.setdefault(name, []).append(millis)


@dataclass(kw_only=True)
class Step:
    """A step service of one engine (park, llm_step, deliver, children), built by the `Runner`
    over its ports as they are now."""

    store: SessionStore
    counters: Counters = field(default_factory=Counters)
    clock: Clock = time.time
