"""Refusals: a rule says no. The code names the rule; the HTTP edge (holdpoint.http.edge) turns
each code into a status, so the core knows nothing of HTTP."""

from __future__ import annotations

from typing import Any, Literal

Code = Literal[
    "validation_error",  # a field is malformed; `param` names it
    "invalid_request",  # well-formed but not possible here (an unknown agent, a reused message id)
    "unauthorized",  # no usable credentials
    "forbidden",  # the caller may not do this (origin rank, a client token on a tenant route)
    "not_found",  # unknown, or another tenant's
    "interrupted",  # R9: the branch is parked
    "turn_already_active",  # one turn at a time
    "call_not_open",  # a settle for a call that is settled, voided or on another attempt
    "call_held",  # R12: a settle for a call an open interrupt holds
    "conflict",  # the session kept changing under a writer
    "payload_too_large",
    "too_many_messages",  # one input adds more than one transaction can record
    "unknown_input_type",
    "invalid_resume",  # A1: the resume payload does not satisfy the interrupt's response_schema
    "stale_approval",  # A3: the resume's expect_fingerprint is not the interrupt's action fingerprint
    "decision_not_current",  # a worker's submit for a decision already answered otherwise, or failed
    "invalid_link",  # a one-click link token that this deployment did not sign as it stands
    "link_expired",  # a one-click link token past its expiry
    "action_expired",  # a sealed Slack button past its expiry
    "not_an_approver",  # A2: the interrupt's approver policy does not admit this caller
    "quota_exceeded",  # a tenant, session or caller limit (core/quotas.py); `param` names it
    "throttled",  # AWS throttled a call the request needs (after its client's retries): try later
    "unavailable",  # AWS failed a call the request needs (a 5xx, no answer): try later
]


class Refusal(Exception):
    """A refusal with its code and the error body's fields (`{"error": {code, message, param?, ...}}`)."""

    def __init__(self, code: Code, message: str, param: str | None = None, *, retry_after: int | None = None,
                 **extra: Any) -> None:
        super().__init__(message)
        self.code: Code = code
        self.message = message
        self.param = param
        self.retry_after = retry_after  # seconds, sent as the `Retry-After` header, not in the body
        self.extra = extra

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.param:
            err["param"] = self.param
        err.update(self.extra)
        return {"error": err}
