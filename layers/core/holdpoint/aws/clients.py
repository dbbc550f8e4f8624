"""Every boto3 client Holdpoint builds, with its retry policy chosen on purpose, and the one reading
of AWS's refusals that are about load rather than the request. Nothing else in the package calls
`boto3.client` (an import contract in pyproject.toml keeps boto3 imported here only).

botocore retries inside one call (attempts below); what is still refused after them is raised as
`ports.Throttled` (throttling: `ThrottlingException`, `ProvisionedThroughputExceededException`,
`RequestLimitExceeded`...) or `ports.Unavailable` (a 5xx, or no connection), and any other refusal
as `Refused` with AWS's code: Holdpoint's own classes, so no adapter reads botocore's `ClientError`.
The HTTP edge answers either with 503 and `Retry-After`; a queue-driven function fails the record,
and SQS or the stream hands it back.

Each service's policy says why in `POLICIES`. The mode is `standard` throughout (jittered
exponential backoff, a retry quota per client), not `adaptive`, whose client-side token bucket
sleeps inside a Lambda billed by the millisecond and learns little in containers that live minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, NoCredentialsError, ReadTimeoutError
from botocore.exceptions import ConnectionError as NoConnection

from holdpoint.aws.errors import Refused, SdkFailure, ThrottledCall, UnavailableCall, Unreachable

THROTTLED = frozenset({
    "ThrottlingException", "Throttling", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "TooManyRequestsException", "LimitExceededException",
})
"""AWS's codes for "too much, for now" (a request that may be sent again as it is)."""


@dataclass(frozen=True)
class Policy:
    attempts: int  # botocore's total_max_attempts: the first try included (its `max_attempts` is retries)
    connect: float  # seconds
    read: float  # seconds
    why: str


POLICIES: dict[str, Policy] = {
    "dynamodb": Policy(3, 3, 10, "every call is conditional, so a retry is safe; past 3 attempts (~1 s of "
                       "backoff) the API answers 503 Retry-After and the engine's record comes back from SQS, "
                       "rather than holding a FIFO group or a client's request on a throttled partition"),
    "sqs": Policy(5, 3, 10, "a kick or wake is sent after a commit that cannot be undone: more attempts, "
                  "since a refused send leaves the work to the timer behind it (a wake, a refused kick's "
                  "one-time timer) or to a retried request"),
    "stepfunctions": Policy(5, 3, 10, "StartExecution is named (a retry finds ExecutionAlreadyExists) and "
                            "SendTaskSuccess follows the resume's commit: both are idempotent, so retry more"),
    "scheduler": Policy(5, 3, 10, "CreateSchedule is named by the timer (a retry finds ConflictException, a "
                        "no-op) and follows a commit that counts on the timer: idempotent, so retry more"),
    "secretsmanager": Policy(3, 3, 10, "read once per container and cached; a refusal is the request's 503"),
    "events": Policy(3, 3, 10, "the notifier's stream record is retried by the event source mapping"),
    "kms": Policy(3, 3, 10, "an approval receipt's Sign and the key set's GetPublicKey (read once per "
                  "container): both safe to repeat; a refusal is the caller's to retry (SQS, or a 503)"),
    "sesv2": Policy(3, 3, 10, "a notification's email (SendEmail): throttling and 5xx are retried here, and then "
                    "by the notifier's durable timers; a retry after a lost answer may send one email twice, "
                    "whose links answer once"),
    "s3": Policy(3, 3, 20, "offloaded bodies: PutObject/GetObject by content key, idempotent"),
    "lambda": Policy(1, 3, 900, "a worker Lambda: no botocore retry, since the engine retries a decision "
                     "with durable backoff (core/retry.py) and a retried Invoke would run the worker twice; "
                     "read timeout is Lambda's longest run"),
    "apigatewaymanagementapi": Policy(3, 2, 5, "a frame to a WebSocket follower: a late frame is worth little, "
                                      "and a lost one is a gap the follower sees and fills by re-subscribing"),
    "xray": Policy(3, 3, 10, "reading a session's traces (GET .../trace): a read, answered 503 when refused"),
    "bedrock-runtime": Policy(1, 10, 60, "a model call: no botocore retry, since the engine's LLM retry policy "
                              "(attempts, backoff) decides what happens next; the read timeout is the call's "
                              "own `timeout_secs` (`read=`)"),
}


def config(service: str) -> Config:
    """The botocore configuration of `service`'s clients (one object per service)."""
    return _CONFIGS[service]


_CONFIGS = {name: Config(retries={"mode": "standard", "total_max_attempts": p.attempts}, connect_timeout=p.connect,
                         read_timeout=p.read) for name, p in POLICIES.items()}


def refusal(exc: Exception) -> Exception | None:
    """Holdpoint's exception for a failed AWS call: about load (`ThrottledCall`, `UnavailableCall`,
    `Unreachable`), or about the request (`Refused`); None for any other failure."""
    if isinstance(exc, ThrottledCall | UnavailableCall | Unreachable | Refused):
        return exc
    if isinstance(exc, ClientError):
        code = (exc.response.get("Error") or {}).get("Code")
        status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
        if code in THROTTLED:
            return ThrottledCall(exc.response.copy(), exc.operation_name)
        if status >= 500:
            return UnavailableCall(exc.response.copy(), exc.operation_name)
        return Refused(exc.response.copy(), exc.operation_name)
    if isinstance(exc, NoConnection | ConnectTimeoutError | ReadTimeoutError):
        return Unreachable(str(exc))
    return None


class Refusing:
    """A client whose operations raise `refusal(exc)` in place of botocore's errors."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._operations = frozenset(client.meta.method_to_api_mapping)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self._operations:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except Exception as exc:
                refused = refusal(exc)
                if refused is None or refused is exc:
                    raise
                raise refused from exc

        return call


def refusing(client: Any) -> Any:
    """`client` (a boto3 client a caller was given) raising as `Refusing`; a stand-in without
    botocore's `meta`, or one already refusing, is used as it is."""
    return Refusing(client) if hasattr(client, "meta") and not isinstance(client, Refusing) else client


def sdk(service: str, *, endpoint_url: str | None = None, region: str | None = None,
        read: float | None = None) -> Any:
    """A plain boto3 client with `service`'s policy (`read`: another read timeout), for callers that read
    the SDK's failures themselves: a customer's worker Lambda and a model, whose errors are theirs."""
    cfg = config(service) if read is None else config(service).merge(Config(read_timeout=read))
    where: dict[str, str] = {}
    if endpoint_url:
        where["endpoint_url"] = endpoint_url
    if region:
        where["region_name"] = region
    return boto3.client(service, config=cfg, **where)


@contextmanager
def sdk_failures() -> Iterator[None]:
    """Around calls to an `sdk` client (and reading what they return, such as an event stream):
    botocore's failures come out as `SdkFailure`, read once here, for callers that decide what
    each means themselves."""
    try:
        yield
    except ClientError as exc:
        err = exc.response.get("Error") or {}
        status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
        raise SdkFailure("answered", str(err.get("Message") or exc), str(err.get("Code") or "ClientError"),
                         status) from exc
    except ReadTimeoutError as exc:
        raise SdkFailure("timeout", str(exc)) from exc
    except NoCredentialsError as exc:
        raise SdkFailure("no_credentials", str(exc)) from exc
    except NoConnection as exc:
        raise SdkFailure("unreachable", str(exc)) from exc
    except BotoCoreError as exc:
        raise SdkFailure("other", str(exc)) from exc


def client(service: str, *, endpoint_url: str | None = None) -> Any:
    """A client of one of Holdpoint's own services, with its policy, raising `refusal`'s exceptions."""
    return refusing(sdk(service, endpoint_url=endpoint_url))  # a test's stand-in is used as it is
