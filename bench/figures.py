"""The issue figures each bench prints next to its target, one line each, and collects for
`make bench` to print last. No imports with side effects: cold_start.py uses it too, and its
timed children inherit its environment."""

from __future__ import annotations

import os

SUMMARY_ENV = "HOLDPOINT_BENCH_SUMMARY"


def figure(name: str, value: str, target: str, met: bool | None) -> str:
    """One issue figure on one line, next to its target, printed and appended to the file that
    $HOLDPOINT_BENCH_SUMMARY names: `make bench` prints that file last, all figures together.
    `met` None: the run cannot judge it (too short, or not the runs the target is about), which
    says "not judged", never NOT MET."""
    verdict = "not judged" if met is None else "met" if met else "NOT MET"
    line = f"FIGURE {name}: {value}; target {target}: {verdict}"
    print(line)
    path = os.environ.get(SUMMARY_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
    return line
