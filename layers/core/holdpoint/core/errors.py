"""The core's errors, in one place. `Refusal`: a rule says no; its code names the rule and the
HTTP edge (holdpoint.http.edge) turns each code into a status, so the core knows nothing of HTTP.
The others are what a core module raises for input it cannot take (a broken worker answer, a
policy or timer that cannot be declared, JSON outside the strict subset, a work message no class
takes, a limit reached), each carrying the field it names; their callers turn them into
`Refusal`s, failed decisions or JSON-RPC errors."""

from __future__ import annotations

from typing import Any, Literal

from holdpoint.core.jsontypes import JsonObject, JsonValue


class HoldpointError(Exception):
    """The root of every error Holdpoint's own code raises, at the bottom of the dependency chain:
    each errors module's classes derive from it, so a caller may catch Holdpoint's errors apart
    from the libraries'."""


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
    "interrupt_expired",  # R16: an answer at or past the interrupt's `expires_at`: its expiry decides
    "not_an_approver",  # A2: the interrupt's approver policy does not admit this caller
    "edit_not_allowed",  # A3: an edit of the action where the interrupt's approver policy allows none
    "quota_exceeded",  # a tenant, session or caller limit (core/quotas.py); `param` names it
    "throttled",  # AWS throttled a call the request needs (after its client's retries): try later
    "unavailable",  # AWS failed a call the request needs (a 5xx, no answer): try later
]


class Refusal(HoldpointError):
    """A refusal with its code and the error body's fields (`{"error": {code, message, param?, ...}}`)."""

    def __init__(self, code: Code, message: str, param: str | None = None, *, retry_after: int | None = None,
                 **extra: JsonValue) -> None:
        super().__init__(message)
        self.code: Code = code
        self.message = message
        self.param = param
        self.retry_after = retry_after  # seconds, sent as the `Retry-After` header, not in the body
        self.extra = extra

    def body(self) -> JsonObject:
        err: JsonObject = {"code": self.code, "message": self.message}
        if self.param:
            err["param"] = self.param
        err.update(self.extra)
        return {"error": err}


class PolicyError(HoldpointError, ValueError):
    """A policy that cannot be declared here; `param` names its field (relative to the policy)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param

    def at(self, field: str) -> str:
        """The param naming this error under the policy's own field (`approval`, `actions[0].approval`)."""
        return f"{field}.{self.param}" if self.param else field


class DeclarationError(HoldpointError, ValueError):
    """A raise declares what could never work, `field` naming it (relative to the raise): a reminder
    or escalation at or after its expiry (A5), or options an approval cannot count (A2)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class RpcError(HoldpointError):
    """A JSON-RPC error of the protocol itself (the envelope, a capability, params), not a tool's outcome."""

    def __init__(self, code: int, message: str, param: str | None = None, **data: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.param, self.data = code, message, param, data


class MessageError(HoldpointError, ValueError):
    """A work message no class takes: the kind is unknown, or a field is missing or of the wrong type."""


QUOTA_RETRY_AFTER = {"open_interrupts_per_tenant": 60, "open_interrupts_per_session": 60, "sessions_per_second": 1}
"""Seconds a refused caller is told to wait (stream waits say when their first lease runs out)."""


class QuotaExceeded(HoldpointError):
    """A limit refused the change; nothing was written. `limit` names it (the error's `param`)."""

    def __init__(self, limit: str, allowed: int, retry_after: int | None = None) -> None:
        super().__init__(f"{limit.replace('_', ' ')}: the limit of {allowed} is reached; retry later")
        self.limit = limit
        self.allowed = allowed
        self.retry_after = retry_after if retry_after is not None else QUOTA_RETRY_AFTER.get(limit, 1)

    def refusal(self) -> Refusal:
        """The API's answer: 429 `quota_exceeded`, `param` naming the limit, with `Retry-After`."""
        return Refusal("quota_exceeded", str(self), self.limit, retry_after=self.retry_after, limit=self.allowed)


class TooMuchWork(HoldpointError):
    """An evaluation went past its step budget."""


class Unsupported(HoldpointError):
    """The schema uses a keyword this module does not evaluate (`UNSUPPORTED`)."""


class JsonProblem(HoldpointError, ValueError):
    """The document is not acceptable JSON; `param` is the path of the offending value ("" = the whole)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param or 'body'}: {message}")
        self.param = param
        self.message = message


class ViewConflict(HoldpointError, ValueError):
    """A client view reuses a known message id at a different place in the tree."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


class ProtocolError(HoldpointError, ValueError):
    """A decision response that breaks the protocol; `param` names the offending field."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param


class CallHeld(ProtocolError):
    """An action settling a call that an open interrupt holds (R12): the whole answer is refused."""

    def __init__(self, param: str, refusal: Refusal) -> None:
        super().__init__(param, refusal.message)
        self.refusal = refusal
