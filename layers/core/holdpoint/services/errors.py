"""The services' errors: what a use case raises when it cannot finish now, for its entry point to
turn into a redelivery (the engine's queue) or a 409 (the API)."""

from __future__ import annotations

from holdpoint.core.errors import HoldpointError


class Contended(HoldpointError):
    """The writer lost the session's conditional commit on every attempt; nothing was written."""


class RetryLater(HoldpointError):
    """The step could not finish now; the queue message is redelivered later."""
