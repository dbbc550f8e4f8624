"""The outbound zone's errors: a worker's or a declared target's address the network guard refuses
(`netguard`); the transports' own failures are the ports' (`WorkerUnavailable`, `DeliveryFailed`)."""

from __future__ import annotations


class Refused(Exception):
    """A URL or a connected address the rules refuse; the message names the field."""
