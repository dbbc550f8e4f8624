"""What a run did, for metrics and tests: the step services count into one `Counters`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Counters:
    """Counts and timings by name."""

    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + value

    def time(self, name: str, millis: float) -> None:
        self.timings.setdefault(name, []).append(millis)
