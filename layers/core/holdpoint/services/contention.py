"""Optimistic concurrency on one session: a writer that loses the conditional commit reloads and
recomputes. Losers wait a full-jitter exponential backoff first, so a burst of writers to one
session drains in a few rounds; immediate retries kept colliding and could starve a writer."""

from __future__ import annotations

import random
import time

ATTEMPTS = 16
BASE_SECS = 0.01
CAP_SECS = 0.4  # worst case across all attempts about 4.6 s, well inside API Gateway's 29 s


def backoff(attempt: int) -> float:
    """Upper bound of the pause after losing attempt `attempt` (counting from 0)."""
    return min(CAP_SECS, BASE_SECS * 2 ** attempt)


def pause(attempt: int) -> None:
    time.sleep(random.uniform(0, backoff(attempt)))
