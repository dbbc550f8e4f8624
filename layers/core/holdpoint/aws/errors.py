"""The AWS adapters' errors, in one place: what AWS answered, read once (`clients.py` turns
botocore's errors into `Refused`, or into the ports' `Throttled`/`Unavailable` for load), what
a DynamoDB write was refused for (`ddb/table.py`), and the adapters' own refusals (a secret
reference, a missing signing key, a failed batch)."""

from __future__ import annotations

from typing import Literal, TypedDict

from holdpoint.aws.ddb.expr import Item
from holdpoint.core.errors import HoldpointError
from holdpoint.ports import Throttled, Unavailable


class ErrorDetail(TypedDict, total=False):
    Code: str
    Message: str


class CancellationReason(ErrorDetail, total=False):
    """One item's reason in a cancelled transaction: AWS's code and message, and the item as it was."""

    Item: Item


class ErrorResponse(TypedDict, total=False):
    """The part of AWS's parsed error answer the adapters read: the error, and what DynamoDB
    returns with a failed condition (`Item`) or a cancelled transaction (`CancellationReasons`)."""

    Error: ErrorDetail
    Item: Item
    CancellationReasons: list[CancellationReason]


class Refused(HoldpointError):
    """AWS refused the request itself, not for load (a condition that did not hold, a name already
    taken, a token already spent): `code` is AWS's error code, `response` its parsed answer. The
    adapters read this, Holdpoint's own class, never botocore's."""

    def __init__(self, response: ErrorResponse, operation_name: str = "") -> None:
        err = response.get("Error") or {}
        self.code = str(err.get("Code") or "")
        self.message = str(err.get("Message") or "")
        self.response, self.operation_name = response, operation_name
        super().__init__(f"{operation_name}: {self.code}: {self.message}")


class ThrottledCall(Throttled):
    """AWS answered a throttling code after botocore's attempts (`code`, `response` as `Refused`'s)."""

    def __init__(self, response: ErrorResponse, operation_name: str = "") -> None:
        answered = Refused(response, operation_name)
        self.code, self.response = answered.code, response
        super().__init__(str(answered))


class UnavailableCall(Unavailable):
    """AWS answered a 5xx after botocore's attempts (`code`, `response` as `Refused`'s)."""

    def __init__(self, response: ErrorResponse, operation_name: str = "") -> None:
        answered = Refused(response, operation_name)
        self.code, self.response = answered.code, response
        super().__init__(str(answered))


class Unreachable(Unavailable):
    """No answer from AWS (connection refused, timed out) after botocore's attempts."""


SdkFailureKind = Literal["answered", "timeout", "no_credentials", "unreachable", "other"]


class SdkFailure(HoldpointError):
    """A call to a service whose errors are the caller's to read (a customer's worker Lambda, a
    model) failed: AWS `answered` with `code` and `status`, the read timed out, there were no
    credentials, no connection, or something `other` in the SDK. Raised by `clients.sdk_failures`,
    so the callers read Holdpoint's class, never botocore's."""

    def __init__(self, kind: SdkFailureKind, message: str, code: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.kind, self.message, self.code, self.status = kind, message, code, status


class ConditionFailed(HoldpointError):
    """A conditional write's condition did not hold; `item` is the item as it was ({} if none)."""

    def __init__(self, item: Item) -> None:
        super().__init__("condition failed")
        self.item = item


class Cancelled(HoldpointError):
    """A transaction was cancelled; `reasons` are the per-item codes, in the order written."""

    def __init__(self, reasons: list[str], message: str) -> None:
        super().__init__(message)
        self.reasons = reasons


class EntireBatchFailed(HoldpointError):
    """Every record failed: the invocation fails, as Powertools' `BatchProcessingError` does, so
    the failure shows in the function's error metrics (SQS retries the batch either way)."""


class SecretRefError(HoldpointError):
    """A reference the rules refuse, or one that names nothing; the message names the field."""


class MissingKey(HoldpointError, RuntimeError):
    """The deployment has no signing secret configured (JWT_SECRET_ARN unset)."""
