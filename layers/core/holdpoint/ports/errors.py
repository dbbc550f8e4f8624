"""What a port raises: the refusals and failures the services read, none of them an SDK's
(an adapter turns AWS's or a provider's error into one of these)."""

from __future__ import annotations

from holdpoint.core.errors import HoldpointError


class Conflict(HoldpointError):
    """The session changed since it was loaded: reload and recompute."""


class Interfered(Conflict):
    """Another transaction was writing one of the items at the same moment (DynamoDB's
    `TransactionConflict`): no condition failed and nothing was written; the same write may be sent again."""


class TooManyChanges(HoldpointError, ValueError):
    """One step would change more items than one transaction holds; nothing was written."""


class TooLarge(HoldpointError, ValueError):
    """A record is larger than the store can hold (an item over its size limit); nothing was written."""


class Throttled(HoldpointError):
    """The store refused the request for now (its throughput is exhausted); nothing was written."""


class Unavailable(HoldpointError):
    """An AWS service failed the call (a 5xx, or no answer) after its client's retries: try later."""


class WorkerUnavailable(HoldpointError):
    """The worker did not answer usefully (timeout, 5xx, not a JSON object): retry the decision."""


class WorkerDeferred(HoldpointError):
    """The worker took the decision and will answer later through `POST /v1/workers/submit` (an
    HTTPS worker answered 202; an in-process one raised this)."""


class LlmError(HoldpointError):
    """An LLM call failed; `retryable` says whether another attempt may help."""

    def __init__(self, message: str, code: str = "provider_error", retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable


class StreamStopped(HoldpointError):  # noqa: N818 (a stop the caller asked for, not a failure)
    """A streamed LLM call was stopped by its caller (its `OnDelta` answered False): no reply."""


class ParkRefused(HoldpointError):
    """Step Functions would not start the park's execution now: the account-region's open-execution
    ceiling (`ExecutionLimitExceeded`) or a throttle. The interrupt stays open; the park is retried."""


class DeliveryFailed(HoldpointError):
    """A notification channel did not take the notification; it is retried on a durable timer."""


class DeliveryRefused(DeliveryFailed):
    """The channel refused the notification for good (SES's `MessageRejected`, an entry that can
    never be sent): sending it again would be refused again, so it is dead-lettered at once."""
