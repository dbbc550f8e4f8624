"""The signature on what Holdpoint POSTs to a worker, a webhook or a run's URL (PROTOCOL.md §2.7):
`X-Holdpoint-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` with the timestamp in
`X-Holdpoint-Timestamp`. One implementation, for the sender (outbound/) and the receiver (the SDK)."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Holdpoint-Signature"
TIMESTAMP_HEADER = "X-Holdpoint-Timestamp"
MAX_SKEW_SECS = 300.0
"""How far a request's timestamp may be from the receiver's clock: an old request is a replay."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str, now: float,
           max_skew: float = MAX_SKEW_SECS) -> bool:
    """A receiver's check: the timestamp within `max_skew` of `now`, then a constant-time compare."""
    try:
        if abs(now - float(timestamp)) > max_skew:
            return False
    except ValueError:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)
