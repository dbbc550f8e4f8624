"""The outbound zone's errors: a worker's or a declared target's address the network guard refuses
(`netguard`), a send to a tenant's queue refused (`queues`); the transports' own failures are the
ports' (`WorkerUnavailable`, `DeliveryFailed`)."""

from __future__ import annotations

from holdpoint.core.errors import HoldpointError


class AddressRefused(HoldpointError):
    """A URL or a connected address the rules refuse; the message names the field."""


class QueueRefused(HoldpointError):
    """A send the queue (or its checks) refused: the reason, to retry or report."""
